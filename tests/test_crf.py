"""The CRF against brute-force enumeration of every label path on tiny cases."""

import itertools

import torch

from seqtransfer.models.crf import CRF


def make_crf(label_count: int, seed: int = 0) -> CRF:
    torch.manual_seed(seed)
    crf = CRF(label_count)
    with torch.no_grad():
        for parameter in crf.parameters():
            parameter.normal_()
    return crf


def brute_force(crf: CRF, emissions: torch.Tensor, length: int) -> tuple[torch.Tensor, list[int]]:
    """(log partition, best path) of one sentence by enumerating all L**length paths."""
    label_count = emissions.size(-1)
    scores, paths = [], []
    for path in itertools.product(range(label_count), repeat=length):
        value = crf.start[path[0]] + crf.end[path[-1]]
        value = value + sum(emissions[t, label] for t, label in enumerate(path))
        value = value + sum(crf.transitions[a, b] for a, b in zip(path, path[1:]))
        scores.append(value)
        paths.append(list(path))
    stacked = torch.stack(scores)
    return torch.logsumexp(stacked, 0), paths[int(stacked.argmax())]


def test_log_partition_and_viterbi_match_enumeration_with_padding():
    crf = make_crf(3)
    lengths = torch.tensor([4, 2, 1, 3])
    emissions = torch.randn(4, 4, 3)
    mask = torch.arange(4).unsqueeze(0) < lengths.unsqueeze(1)
    log_partition = crf.log_partition(emissions, mask)
    decoded = crf.decode(emissions, mask)
    for row, length in enumerate(lengths.tolist()):
        expected_partition, expected_path = brute_force(crf, emissions[row], length)
        assert torch.allclose(log_partition[row], expected_partition, atol=1e-5)
        assert decoded[row, :length].tolist() == expected_path
        assert decoded[row, length:].eq(0).all()


def test_negative_log_likelihood_is_minus_log_probability_of_gold_path():
    crf = make_crf(2, seed=3)
    emissions = torch.randn(1, 3, 2)
    mask = torch.ones(1, 3, dtype=torch.bool)
    labels = torch.tensor([[1, 0, 1]])
    log_partition, _ = brute_force(crf, emissions[0], 3)
    gold = crf.start[1] + crf.end[1] + emissions[0, 0, 1] + emissions[0, 1, 0] + emissions[0, 2, 1]
    gold = gold + crf.transitions[1, 0] + crf.transitions[0, 1]
    assert torch.allclose(crf.negative_log_likelihood(emissions, labels, mask), log_partition - gold, atol=1e-5)


def test_probabilities_of_all_paths_sum_to_one():
    crf = make_crf(2, seed=5)
    emissions = torch.randn(1, 3, 2)
    mask = torch.ones(1, 3, dtype=torch.bool)
    total = sum(torch.exp(-crf.negative_log_likelihood(emissions, torch.tensor([list(path)]), mask)) for path in itertools.product(range(2), repeat=3))
    assert torch.allclose(total, torch.tensor(1.0), atol=1e-5)


def autograd_log_partition(crf: CRF, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The forward algorithm in log space, differentiated by autograd (the reference gradient)."""
    alpha = crf.start + emissions[:, 0]
    for step in range(1, emissions.size(1)):
        candidate = torch.logsumexp(alpha.unsqueeze(2) + crf.transitions, dim=1) + emissions[:, step]
        alpha = torch.where(mask[:, step].unsqueeze(1), candidate, alpha)
    return torch.logsumexp(alpha + crf.end, dim=1)


def test_forward_backward_gradient_equals_autograd_with_padding_and_one_token_sentences():
    crf = make_crf(5, seed=7)
    lengths = torch.tensor([6, 1, 3, 6, 2])
    emissions = (3 * torch.randn(5, 6, 5)).requires_grad_()
    mask = torch.arange(6).unsqueeze(0) < lengths.unsqueeze(1)
    weights = torch.randn(5)  # a different upstream gradient per sentence
    parameters = [emissions, crf.transitions, crf.start, crf.end]
    expected = torch.autograd.grad((autograd_log_partition(crf, emissions, mask) * weights).sum(), parameters)
    actual = torch.autograd.grad((crf.log_partition(emissions, mask) * weights).sum(), parameters)
    for mine, reference in zip(actual, expected):
        assert torch.allclose(mine, reference, atol=1e-5)
    assert actual[0][~mask].abs().sum() == 0  # padding gets no gradient


def test_log_partition_and_gradient_stay_exact_for_extreme_scores():
    crf = make_crf(4, seed=9)
    with torch.no_grad():
        crf.transitions.mul_(40.0)  # transitions spanning hundreds of nats
    emissions = (60 * torch.randn(3, 30, 4)).requires_grad_()
    mask = torch.ones(3, 30, dtype=torch.bool)
    mask[1, 17:] = False
    mask[2, 1:] = False
    value = crf.log_partition(emissions, mask)
    reference_crf = make_crf(4, seed=9).double()  # the reference in float64, where autograd is exact enough
    with torch.no_grad():
        reference_crf.transitions.mul_(40.0)
    reference_emissions = emissions.detach().double().requires_grad_()
    reference = autograd_log_partition(reference_crf, reference_emissions, mask)
    assert torch.allclose(value.double(), reference, rtol=1e-6)
    gradients = torch.autograd.grad(value.sum(), [emissions, crf.transitions, crf.start, crf.end])
    expected = torch.autograd.grad(reference.sum(), [reference_emissions, reference_crf.transitions, reference_crf.start, reference_crf.end])
    for mine, reference_gradient in zip(gradients, expected):
        assert torch.allclose(mine.double(), reference_gradient, atol=1e-5)


def test_label_marginals_match_enumeration_on_the_numpy_and_the_torch_recursions(monkeypatch):
    """p(y_t = l | sentence) summed over every path with label l at t, over Z; 0 past each end. The
    CPU takes the numpy forward-backward, other devices the torch recursion: both are checked here,
    inside inference mode as prediction calls them."""
    import seqtransfer.models.crf as crf_module

    crf = make_crf(3, seed=7)
    lengths = torch.tensor([4, 2, 1])
    emissions = torch.randn(3, 4, 3)
    mask = torch.arange(4).unsqueeze(0) < lengths.unsqueeze(1)
    expected = torch.zeros(3, 4, 3)
    with torch.no_grad():
        for row, length in enumerate(lengths.tolist()):
            log_partition, _ = brute_force(crf, emissions[row], length)
            for path in itertools.product(range(3), repeat=length):
                score = crf.start[path[0]] + crf.end[path[-1]] + sum(emissions[row, t, label] for t, label in enumerate(path))
                score = score + sum(crf.transitions[a, b] for a, b in zip(path, path[1:]))
                for t, label in enumerate(path):
                    expected[row, t, label] += torch.exp(score - log_partition)
    with torch.inference_mode():
        numpy_marginals = crf.marginals(emissions, mask)
    monkeypatch.setattr(crf_module.ForwardBackward, "apply", lambda *arguments: crf_module.log_partition_torch(*arguments))
    with torch.inference_mode():
        torch_marginals = crf.marginals(emissions, mask)
    for marginals in (numpy_marginals, torch_marginals):
        assert torch.allclose(marginals, expected, atol=1e-5)
        assert torch.allclose(marginals.sum(-1), mask.float(), atol=1e-5)  # each real token's labels sum to 1


def test_marginals_at_a_temperature_are_those_of_the_crf_with_every_score_divided_by_it():
    crf = make_crf(3, seed=9)
    cooled = make_crf(3, seed=9)
    with torch.no_grad():
        for parameter in cooled.parameters():
            parameter /= 2.0
    emissions = torch.randn(2, 3, 3)
    mask = torch.tensor([[True, True, True], [True, True, False]])
    assert torch.allclose(crf.marginals(emissions, mask, temperature=2.0), cooled.marginals(emissions / 2.0, mask), atol=1e-6)
    assert not torch.allclose(crf.marginals(emissions, mask, temperature=2.0), crf.marginals(emissions, mask), atol=1e-3)
