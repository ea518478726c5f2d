"""Mutual information between a layer's vectors and discrete labels (To-tune paper, Figure 2).

The paper estimates I(H; Y) between the mean hidden activations H of each layer and the labels Y
with EDGE (Noshad et al. 2018), for which no maintained package exists. We use the k-nearest-
neighbour estimator for a continuous variable and a discrete one (Ross 2014), the estimator
scikit-learn's ``mutual_info_classif`` applies to one feature at a time, here on the whole vector:

    I(H; Y) = psi(N) + psi(k) - < psi(N_y) > - < psi(m) >

where, for each point, N_y is the number of points with its label, the distance to its k-th
nearest neighbour among them fixes a radius, and m counts the points of any label inside that
radius (the k-th neighbour included, the point itself not). Written here (a few lines of torch)
because scikit-learn's version reads one feature at a time and is not a dependency; in nats,
clipped at 0. Vectors are standardised per dimension first, so that no unit dominates the
distances, then moved by a tiny fixed jitter (as scikit-learn does): a frozen layer 0 gives every
token of a word type the same vector, and without the jitter such ties would fill every radius with
points of all labels and read as no information. With shuffled labels, and for random vectors with
shuffled labels, the estimate is near 0: the paper's two sanity checks, reported beside.
"""

from __future__ import annotations

import torch

NEIGHBOURS = 3  # k: scikit-learn's default for this estimator
MAX_POINTS = 4000  # a tagging run's tokens are sampled down to this many (distances are N x N)
JITTER = 1e-6  # standard deviations: breaks ties between identical vectors, moves nothing else


def mutual_information(vectors: torch.Tensor, labels: torch.Tensor, neighbours: int = NEIGHBOURS) -> float:
    """I(H; Y) in nats of vectors (N, F) and integer labels (N,); labels seen once are left out."""
    counts = torch.bincount(labels)[labels]  # N_y of each point
    keep = counts > 1
    vectors, labels, counts = vectors[keep].double(), labels[keep], counts[keep]
    if len(labels) < 2 or len(labels.unique()) < 2:
        return 0.0
    vectors = (vectors - vectors.mean(0)) / (vectors.std(0) + 1e-12)
    vectors = vectors + JITTER * torch.randn(vectors.shape, generator=torch.Generator().manual_seed(0), dtype=vectors.dtype)
    distances = torch.cdist(vectors, vectors, compute_mode="donot_use_mm_for_euclid_dist")  # (N, N), exact
    distances.fill_diagonal_(float("inf"))  # a point is not its own neighbour
    same_label = labels[:, None] == labels[None, :]
    k = (counts - 1).clamp(max=neighbours)  # a label with few points reads fewer neighbours
    nearest = distances.masked_fill(~same_label, float("inf")).topk(min(neighbours, len(labels) - 1), dim=1, largest=False).values  # (N, k)
    radius = nearest.gather(1, (k - 1)[:, None])  # (N, 1): the k-th same-label neighbour
    inside = (distances <= radius).sum(1)  # m: every label, the k-th neighbour included
    digamma = torch.special.digamma
    estimate = digamma(torch.tensor(float(len(labels)), dtype=torch.float64)) + digamma(k.double()).mean() - digamma(counts.double()).mean() - digamma(inside.double()).mean()
    return max(0.0, float(estimate))


def sampled(vectors: torch.Tensor, labels: torch.Tensor, limit: int = MAX_POINTS) -> tuple[torch.Tensor, torch.Tensor]:
    """At most ``limit`` points, drawn without replacement by a fixed generator (the same for every layer)."""
    if len(labels) <= limit:
        return vectors, labels
    chosen = torch.randperm(len(labels), generator=torch.Generator().manual_seed(0))[:limit]
    return vectors[chosen], labels[chosen]


def shuffled(labels: torch.Tensor) -> torch.Tensor:
    """The labels in a fixed random order: the sanity check's random labels."""
    return labels[torch.randperm(len(labels), generator=torch.Generator().manual_seed(1))]


def random_vectors(shape: torch.Size) -> torch.Tensor:
    """Standard normal vectors (N, F) from a fixed generator: the paper's random representations."""
    return torch.randn(shape, generator=torch.Generator().manual_seed(2))


def estimated_points(labels: torch.Tensor) -> int:
    """How many of the labels the estimate reads: those whose label is seen more than once."""
    return int((torch.bincount(labels)[labels] > 1).sum())
