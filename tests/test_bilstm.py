"""The padded BiLSTM with per-sequence reversal equals a packed bidirectional LSTM."""

import pytest
import torch
from torch import nn

from seqtransfer.models.bilstm import BiLSTM, reversal_index


def packed_reference(model: BiLSTM, inputs: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """The same weights in a standard bidirectional nn.LSTM over packed sequences."""
    reference = nn.LSTM(inputs.size(-1), model.output_size // 2, batch_first=True, bidirectional=True)
    with torch.no_grad():
        for name in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"):
            getattr(reference, name).copy_(getattr(model.forward_lstm, name))
            getattr(reference, name + "_reverse").copy_(getattr(model.backward_lstm, name))
    packed = nn.utils.rnn.pack_padded_sequence(inputs, lengths, batch_first=True, enforce_sorted=False)
    output, _ = reference(packed)
    return nn.utils.rnn.pad_packed_sequence(output, batch_first=True, total_length=inputs.size(1))[0]


def test_reversal_index_reverses_valid_prefix_only():
    index = reversal_index(torch.tensor([3, 1, 4]), 4)
    assert index.tolist() == [[2, 1, 0, 3], [0, 1, 2, 3], [3, 2, 1, 0]]


def test_outputs_match_packed_lstm_on_valid_positions():
    torch.manual_seed(0)
    model = BiLSTM(5, 8)
    lengths = torch.tensor([6, 2, 4, 1])
    inputs = torch.randn(4, 6, 5)
    expected = packed_reference(model, inputs, lengths)
    actual = model(inputs, lengths)
    mask = torch.arange(6).unsqueeze(0) < lengths.unsqueeze(1)
    assert torch.allclose(actual[mask], expected[mask], atol=1e-6)


def test_final_states_are_last_forward_and_first_backward_outputs():
    torch.manual_seed(1)
    model = BiLSTM(3, 4)
    lengths = torch.tensor([5, 3])
    inputs = torch.randn(2, 5, 3)
    outputs = packed_reference(model, inputs, lengths)
    finals = model.final_states(inputs, lengths)
    for row, length in enumerate(lengths.tolist()):
        assert torch.allclose(finals[row, :2], outputs[row, length - 1, :2], atol=1e-6)
        assert torch.allclose(finals[row, 2:], outputs[row, 0, 2:], atol=1e-6)


def test_bucket_size_rounds_up_by_at_most_an_eighth():
    from seqtransfer.models.representation import bucket_size

    assert [bucket_size(size) for size in (1, 12, 15, 16, 17, 210, 257)] == [1, 12, 15, 16, 18, 224, 288]
    assert all(size <= bucket_size(size) <= size * 1.125 for size in range(1, 5000))
    assert len({bucket_size(size) for size in range(100, 400)}) <= 24


@pytest.mark.parametrize("one_call", [False, True])  # the CPU's length groups; a GPU's one call (forced here on the CPU)
def test_character_encoder_groups_and_padding_do_not_change_any_form(one_call, monkeypatch):
    from seqtransfer.models.representation import CharacterEncoder

    monkeypatch.setattr(CharacterEncoder, "one_call", one_call)
    torch.manual_seed(2)
    encoder = CharacterEncoder(character_count=9, dimension=4, hidden=6)
    lengths = torch.tensor([3, 1, 17, 7, 2, 4, 5, 6, 2, 31, 1, 4, 2, 3, 5, 13, 9, 12, 26])  # every group, unsorted
    characters = torch.randint(1, 9, (lengths.numel(), int(lengths.max())))
    characters[torch.arange(characters.size(1)).unsqueeze(0) >= lengths.unsqueeze(1)] = 0
    for rows in (torch.arange(lengths.numel()), torch.argsort(lengths, stable=True), torch.tensor([0, 1, 4])):
        encoded = encoder(characters[rows], lengths[rows])
        assert encoded.shape == (rows.numel(), 6)
        for position, row in enumerate(rows.tolist()):  # each form alone: no padding, no grouping
            length = int(lengths[row])
            alone = encoder.lstm.final_states(encoder.embedding(characters[row : row + 1, :length]), lengths[row : row + 1])
            assert torch.allclose(encoded[position], alone[0], atol=1e-6)
    encoder(characters, lengths).sum().backward()
    assert encoder.embedding.weight.grad[0].abs().sum() == 0  # the padding character stays zero


def test_length_groups_are_contiguous_slices_of_least_cost():
    import itertools

    from seqtransfer.models.representation import CALL_COST, STEP_COST, bucket_size, length_groups

    def cost(sizes, groups):
        return sum(CALL_COST + STEP_COST * bucket_size(sizes[end - 1]) + bucket_size(end - start) * bucket_size(sizes[end - 1]) for start, end in groups)

    for sizes in ([1] * 300 + [2] * 200 + [9] * 40 + [60], [3, 3, 4, 7, 7, 7, 12, 25, 25, 90, 195], [5], [1, 1, 2, 2, 40] * 1):
        sizes = sorted(sizes)
        groups = length_groups(sizes)
        assert groups[0][0] == 0 and groups[-1][1] == len(sizes)
        assert all(end == next_start for (_, end), (next_start, _) in zip(groups, groups[1:]))
        assert all(sizes[end - 1] != sizes[end] for _, end in groups[:-1])  # cuts only where the length changes
        changes = [index for index in range(1, len(sizes)) if sizes[index] != sizes[index - 1]]
        every_split = ([(start, end) for start, end in zip([0, *chosen], [*chosen, len(sizes)])] for count in range(len(changes) + 1) for chosen in itertools.combinations(changes, count))
        assert cost(sizes, groups) == min(cost(sizes, split) for split in every_split)
    assert len(length_groups([1] * 300 + [2] * 200 + [9] * 40 + [60])) > 1  # the long form is split off
