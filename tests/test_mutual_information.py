"""The mutual-information estimator of the probes (To-tune paper, Figure 2)."""

import math

import numpy as np
import pytest
import torch

from seqtransfer.analysis.mutual_information import mutual_information, sampled, shuffled


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


def test_sampling_keeps_small_sets_whole_and_draws_the_same_points_each_time():
    vectors, labels = torch.randn(50, 2), torch.arange(50)
    assert sampled(vectors, labels)[1] is labels
    first, second = sampled(vectors, labels, limit=10), sampled(vectors, labels, limit=10)
    assert torch.equal(first[1], second[1]) and len(first[1]) == 10
