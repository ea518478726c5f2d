"""PretRand's combination of branches (equations 9-11) on hand-built tensors."""

import torch

from seqtransfer.models.pretrand import BranchWeighting, combine_branches


def test_independent_l2_normalisation_then_unit_weights():
    pretrained = torch.tensor([[[3.0, 4.0]]])  # norm 5
    random = torch.tensor([[[0.0, -2.0]]])  # norm 2
    combined = combine_branches(pretrained, random, BranchWeighting(2, learnable=True), normalize=True)
    assert torch.allclose(combined, torch.tensor([[[0.6, 0.8 - 1.0]]]))


def test_learnable_per_class_weights_scale_each_branch():
    weighting = BranchWeighting(2, learnable=True)
    with torch.no_grad():
        weighting.pretrained.copy_(torch.tensor([2.0, 0.5]))  # u
        weighting.random.copy_(torch.tensor([1.0, 3.0]))  # v
    combined = combine_branches(torch.tensor([[[3.0, 4.0]]]), torch.tensor([[[0.0, -2.0]]]), weighting, normalize=True)
    assert torch.allclose(combined, torch.tensor([[[2.0 * 0.6 + 0.0, 0.5 * 0.8 - 3.0]]]))


def test_ablation_without_normalisation_or_weighting_is_a_plain_sum():
    weighting = BranchWeighting(2, learnable=False)
    assert not list(weighting.parameters()) and set(weighting.state_dict()) == {"pretrained", "random"}
    combined = combine_branches(torch.tensor([[[3.0, 4.0]]]), torch.tensor([[[0.0, -2.0]]]), weighting, normalize=False)
    assert torch.allclose(combined, torch.tensor([[[3.0, 2.0]]]))


def test_gradients_reach_u_and_v():
    """d(sum of u * p/|p| + v * r/|r|)/du is the sum of the normalised pretrained scores over the
    batch and time steps, per class (and the same for v with the random ones)."""
    weighting = BranchWeighting(3, learnable=True)
    pretrained, random = torch.randn(2, 4, 3), torch.randn(2, 4, 3)
    combine_branches(pretrained, random, weighting, normalize=True).sum().backward()
    for weights, scores in ((weighting.pretrained, pretrained), (weighting.random, random)):
        expected = (scores / scores.norm(dim=-1, keepdim=True)).sum(dim=(0, 1))
        assert torch.allclose(weights.grad.reshape(-1), expected, atol=1e-6)


def test_a_scale_multiplies_the_normalised_scores_only():
    weighting = BranchWeighting(2, learnable=False)
    pretrained, random = torch.tensor([[[3.0, 4.0]]]), torch.tensor([[[0.0, -2.0]]])
    scaled = combine_branches(pretrained, random, weighting, normalize=True, scale=10.0)
    assert torch.allclose(scaled, 10.0 * combine_branches(pretrained, random, weighting, normalize=True))
    assert torch.allclose(combine_branches(pretrained, random, weighting, normalize=False, scale=10.0), torch.tensor([[[3.0, 2.0]]]))
