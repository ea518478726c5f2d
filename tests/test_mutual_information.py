"""The mutual-information estimator of the probes (To-tune paper, Figure 2)."""

import math

import numpy as np
import pytest
import torch

from seqtransfer.analysis.mutual_information import mutual_information, random_vectors, sampled, shuffled


def two_gaussians(points: int, shift: float, dimensions: int = 1, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Labels 0/1 with equal odds; the first dimension is N(-shift, 1) or N(+shift, 1), the others noise."""
    generator = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 2, (points,), generator=generator)
    vectors = torch.randn(points, dimensions, generator=generator)
    vectors[:, 0] += shift * (2 * labels - 1)
    return vectors, labels


def exact_information(shift: float) -> float:
    """I(H; Y) in nats of one dimension N(+-shift, 1) and an even binary label: H(H) - H(H | Y), integrated numerically."""
    grid = np.linspace(-12, 12, 200_001)
    density = 0.5 * (np.exp(-((grid - shift) ** 2) / 2) + np.exp(-((grid + shift) ** 2) / 2)) / math.sqrt(2 * math.pi)
    marginal_entropy = -float((density * np.log(density + 1e-300)).sum() * (grid[1] - grid[0]))
    return marginal_entropy - 0.5 * math.log(2 * math.pi * math.e)


@pytest.mark.parametrize("shift", [0.5, 1.0, 2.0])
def test_the_estimate_is_near_the_exact_information_of_two_gaussians(shift):
    vectors, labels = two_gaussians(3000, shift)
    assert mutual_information(vectors, labels) == pytest.approx(exact_information(shift), abs=0.03)


def test_shuffled_labels_carry_no_information_and_separable_ones_carry_more_than_noisy_ones():
    vectors, labels = two_gaussians(1500, 2.0, dimensions=16)
    separable = mutual_information(vectors, labels)
    assert mutual_information(vectors, shuffled(labels)) < 0.02
    noisy, noisy_labels = two_gaussians(1500, 0.3, dimensions=16)
    assert separable > mutual_information(noisy, noisy_labels) + 0.1


def test_one_label_or_labels_seen_once_give_zero_and_do_not_crash():
    vectors = torch.randn(10, 3)
    assert mutual_information(vectors, torch.zeros(10, dtype=torch.long)) == 0.0
    assert mutual_information(vectors, torch.arange(10)) == 0.0  # every label seen once: nothing to compare


def test_it_matches_scikit_learns_estimator_on_one_feature():
    feature_selection = pytest.importorskip("sklearn.feature_selection")
    vectors, labels = two_gaussians(800, 1.0)
    expected = feature_selection.mutual_info_classif(vectors.numpy().astype(np.float64), labels.numpy(), n_neighbors=3, random_state=0)[0]
    assert mutual_information(vectors, labels) == pytest.approx(expected, abs=1e-3)  # scikit-learn adds 1e-10 noise per value


def test_older_probes_without_mutual_information_and_a_frozen_run_render():
    from seqtransfer.analysis.html import probes_section

    older = {"run": "runs/a", "layers": 2, "before": [60.0, 70.0], "metric": "accuracy", "split": "dev", "labels": 2, "sentence": True}
    page = probes_section([older])
    assert "I(H; Y)" not in page and "70.00" in page
    frozen = {**older, "mutual_information": {"neighbours": 3, "points": 40, "before": [0.1, 0.2], "before_random_labels": [0.0, 0.01]}}
    page = probes_section([frozen])
    assert "I(H; Y) before, shuffled labels</th>" in page and "0.200" in page and "70.00<" in page and "after" not in page
    assert "random vectors" not in page  # probes saved before that check read as they were
    checked = {**frozen, "mutual_information": {**frozen["mutual_information"], "random_vectors_random_labels": 0.004}}
    assert "width against them: 0.004)" in probes_section([checked])
    named = {**older, "encoder": "tweet-bilstm-small", "encoder_weights": "ee52314b76cfadc3", "task": "paraphrase"}
    assert "tweet-bilstm-small ee52314b76cfadc3, paraphrase (runs/a)" in probes_section([named])  # which weights of that name the probes read


def test_random_vectors_carry_no_information_about_shuffled_labels():
    labels = torch.arange(600) % 3
    assert mutual_information(random_vectors(torch.Size((600, 16))), shuffled(labels)) < 0.03
    assert torch.equal(random_vectors(torch.Size((4, 2))), random_vectors(torch.Size((4, 2))))  # fixed: the same every call


def test_sampling_keeps_small_sets_whole_and_draws_the_same_points_each_time():
    vectors, labels = torch.randn(50, 2), torch.arange(50)
    assert sampled(vectors, labels)[1] is labels
    first, second = sampled(vectors, labels, limit=10), sampled(vectors, labels, limit=10)
    assert torch.equal(first[1], second[1]) and len(first[1]) == 10


def test_identical_vectors_of_one_label_each_read_as_that_labels_information():
    """A frozen layer 0 gives each word type one vector: ties must not fill every radius with all labels."""
    generator = torch.Generator().manual_seed(0)
    types = torch.randint(0, 200, (3000,), generator=generator)  # tokens of 200 word types
    type_vectors, type_labels = torch.randn(200, 8, generator=generator), torch.randint(0, 5, (200,), generator=generator)
    labels = type_labels[types]
    probabilities = torch.bincount(labels).double() / len(labels)
    label_entropy = float(-(probabilities[probabilities > 0] * probabilities[probabilities > 0].log()).sum())
    assert mutual_information(type_vectors[types], labels) == pytest.approx(label_entropy, abs=0.05)  # H determines Y: I = H(Y)


def test_labels_with_fewer_points_than_neighbours_match_scikit_learn():
    feature_selection = pytest.importorskip("sklearn.feature_selection")
    vectors, labels = two_gaussians(300, 1.0)
    labels[:6] = torch.tensor([2, 2, 3, 3, 4, 4])  # three labels of two points: one neighbour each
    labels[6:9] = 5  # one of three: two neighbours
    expected = feature_selection.mutual_info_classif(vectors.numpy().astype(np.float64), labels.numpy(), n_neighbors=3, random_state=0)[0]
    assert mutual_information(vectors, labels) == pytest.approx(expected, abs=2e-3)


def test_the_probe_and_unit_figures_are_the_same_bytes_each_time_and_leave_pyplot_alone(tmp_path):
    import matplotlib

    from seqtransfer.analysis.probes import draw_probes
    from seqtransfer.analysis.units import draw_drops

    backend = matplotlib.get_backend()
    probes = {
        "layers": 2,
        "before": [60.0, 70.0],
        "after": [65.0, 72.0],
        "metric": "accuracy",
        "split": "dev",
        "mutual_information": {"before": [0.1, 0.2], "after": [0.2, 0.3], "before_random_labels": [0.0, 0.01]},
    }
    drops = {"drops": {"pos": [0.5, 1.5, 0.0], "ner": [2.0, 0.1, 0.3]}, "units": [0, 1, 2], "lower_task": "pos", "split": "dev"}
    written = []
    for attempt in ("first", "second"):
        (tmp_path / attempt).mkdir()
        draw_probes(probes, tmp_path / attempt / "probes.png")
        draw_drops(drops, tmp_path / attempt / "units.png")
        written.append({name: (tmp_path / attempt / name).read_bytes() for name in ("probes.png", "probes.svg", "units.png", "units.svg")})
    assert written[0] == written[1] and all(written[0].values())
    assert matplotlib.get_backend() == backend  # no global backend switch: a user's interactive session keeps its own
