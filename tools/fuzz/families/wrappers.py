"""``wrappers``: torch functions reached through torch's own Python code —
``torch.nn.functional`` (activations, normalisations, padding, pooling,
losses, attention), ``torch.functional`` (``einsum``, ``split``, ``norm``,
``unique``, ``meshgrid``, ``tensordot``, ``cdist``...), ``torch.masked``
reductions and softmaxes, the ``Tensor`` methods and operators defined in
Python (``split``, ``unique``, ``norm``, ``unflatten``, ``__rpow__``,
``__rsub__``, ``__floordiv__``, ``__reversed__``, ``__format__``...) — and
torch functions and lambdas over them under ``torch.func`` transforms
(``vmap`` with in/out dims, ``grad``, ``vmap(grad)``, ``jvp``, ``jacrev``),
each with dims, keywords and modes drawn per statement. The record compares
values, dtypes, shapes and ``requires_grad`` with eager's.

``program(x)``: a (3, 4) tensor (requiring grad in some programs, not
contiguous in some). Each
statement either replaces the running tensor ``t`` (shape (3, 4) kept) or
appends a result of another shape to ``outs``.
"""
from __future__ import annotations

import random
from typing import Callable

from tools.fuzz.program import Part, function_program

PRELUDE = '''\
import copy
import torch.nn.functional as F

TARGET = torch.tensor([0, 3, 1])
'''

Draw = Callable[[random.Random], str]


def _dim(r: random.Random) -> int:
    return r.choice([0, 1, -1, -2])


def _num(r: random.Random, *values: float) -> float:
    return r.choice(values)


#: row-wise functions of a (4,) or (3,) vector that keep its shape (for vmap)
_ROWWISE = ["torch.sin", "F.gelu", "F.silu", "torch.nn.functional.softsign", "lambda r: F.softmax(r, dim=0)",
            "lambda r: F.normalize(r, dim=0)", "lambda r: r.cumsum(0)", "lambda r: r - r.mean()",
            "lambda r: torch.sort(r).values", "lambda r: F.pad(r[1:], (1, 0))", "lambda r: torch.einsum('i,i->i', r, r)",
            "lambda r: r.flip(0)", "lambda r: torch.where(r > 0, r, r * 0.1)", "lambda r: F.log_softmax(r, 0)"]

#: reductions of a vector (for vmap): a scalar each
_REDUCTIONS = ["torch.sum", "torch.mean", "torch.norm", "torch.prod", "torch.amax", "torch.logsumexp",
               "lambda r: r.norm(p=1)", "lambda r: torch.linalg.vector_norm(r, ord=3)", "torch.var",
               "lambda r: torch.dot(r, r)", "lambda r: F.softmax(r, 0).max()", "torch.std"]

#: scalar functions of a (3, 4) or (4,) tensor (for grad)
_SCALARS = ["lambda r: (F.gelu(r) ** 2).sum()", "lambda r: torch.norm(r)", "lambda r: F.log_softmax(r, -1).sum()",
            "lambda r: torch.einsum('...,...->', r, r)", "lambda r: F.mse_loss(r, torch.ones_like(r))",
            "lambda r: (r.sin() * r).sum()", "torch.sum", "lambda r: F.softplus(r, beta=2.0).mean()",
            "lambda r: torch.logsumexp(r, dim=-1).sum()", "lambda r: F.smooth_l1_loss(r, r * 0.5)"]

#: statements that replace ``t`` with a (3, 4) tensor
SHAPE_KEEPING: list[Draw] = [
    lambda r: f"t = F.softmax(t, dim={_dim(r)})",
    lambda r: f"t = F.log_softmax(t, dim={_dim(r)}, dtype={r.choice(['None', 'torch.float64'])}).float()",
    lambda r: f"t = F.softmin(t, {_dim(r)})",
    lambda r: f"t = F.normalize(t, p={_num(r, 1, 2, 3.0)}, dim={_dim(r)}, eps={_num(r, 1e-12, 0.1)})",
    lambda r: f"t = F.gelu(t, approximate={r.choice(['none', 'tanh'])!r})",
    lambda r: f"t = F.leaky_relu(t, negative_slope={_num(r, 0.01, 0.2)})",
    lambda r: f"t = F.elu(t, alpha={_num(r, 1.0, 0.5)})",
    lambda r: f"t = F.{r.choice(['selu', 'silu', 'mish', 'hardswish', 'hardsigmoid', 'softsign', 'tanhshrink', 'relu6', 'logsigmoid', 'celu'])}(t)",
    lambda r: f"t = F.softplus(t, beta={_num(r, 1, 2)}, threshold={_num(r, 20, 1)})",
    lambda r: f"t = F.hardtanh(t, min_val={_num(r, -1.0, -0.5)}, max_val={_num(r, 1.0, 0.5)})",
    lambda r: f"t = F.threshold(t, {_num(r, 0.1, -0.1)}, {_num(r, 20.0, 0.0)})",
    lambda r: f"t = F.{r.choice(['hardshrink', 'softshrink'])}(t, {_num(r, 0.5, 0.1)})",
    lambda r: f"t = F.dropout(t, p={_num(r, 0.0, 0.5)}, training={r.choice([True, False])})",
    lambda r: f"t = F.rrelu(t, training={r.choice([True, False])})",
    lambda r: r.choice(["t = F.layer_norm(t, (4,))", "t = F.layer_norm(t, (3, 4), eps=1e-3)",
                        "t = F.layer_norm(t, (4,), torch.ones(4) * 2, torch.zeros(4))"]),
    lambda r: f"t = F.group_norm(t, {r.choice([1, 2, 4])})",
    lambda r: f"t = F.batch_norm(t, None, None, training=True, momentum={_num(r, 0.1, 0.5)})",
    lambda r: "t = F.instance_norm(t.unsqueeze(0)).squeeze(0)",
    lambda r: r.choice(["t = F.pad(t, (1, 1), mode='constant', value=0.5)[:, 1:-1] + t",
                        f"t = F.pad(t, (1, 2), mode={r.choice(['reflect', 'replicate', 'circular'])!r})[:, :4]",
                        "t = F.pad(t, (0, 0, 1, 0))[1:]"]),
    lambda r: (lambda d: f"t = F.glu(torch.cat([t, t * 2], {d}), dim={d})")(_dim(r)),
    lambda r: f"t = t.norm(p={_num(r, 1, 2, 3.0)}, dim={_dim(r)}, keepdim=True) * t",
    lambda r: f"t = torch.norm(t, p={r.choice(['fro', 2, 1])!r}) + t" if r.random() < 0.5 else
    f"t = torch.norm(t, dim={_dim(r)}, keepdim=True, dtype=torch.float64).float() + t",
    lambda r: r.choice(["t = torch.einsum('ij,ij->ij', t, t)", "t = torch.einsum('ij->ji', t).t()",
                        "t = torch.einsum('ij,kj->ik', t, t) @ t", "t = torch.einsum('i,j->ij', t[:, 0], t[0])",
                        "t = torch.einsum('bi,bi->b', t, t)[:, None] * t", "t = torch.einsum(t, [0, 1], [1, 0]).t()"]),
    lambda r: (lambda d: f"t = torch.cat(torch.split(t, {r.choice([1, 2, 3])}, dim={d}), {d})")(_dim(r)),
    lambda r: (lambda d: f"t = torch.cat(t.split({r.choice([1, 2, 3])}, {d}), {d})")(_dim(r)),
    lambda r: "t = torch.cat(t.split([1, 3], dim=1), 1)" if r.random() < 0.5 else "t = torch.cat(t.split([2, 1]), 0)",
    lambda r: (lambda d: f"t = torch.stack(t.unbind({d}), {d})")(_dim(r)),
    lambda r: (lambda d: f"t = torch.cat(t.chunk({r.choice([1, 2, 3])}, {d}), {d})")(_dim(r)),
    lambda r: (lambda d: f"t = torch.cat(t.tensor_split({r.choice([1, 2, 3])}, dim={d}), {d})")(_dim(r)),
    lambda r: "t = torch.broadcast_tensors(t, t[0])[1] * t",
    lambda r: f"t = torch.masked.softmax(t, {_dim(r)}, mask=t > -0.5)",
    lambda r: f"t = torch.masked.{r.choice(['sum', 'amax', 'amin', 'prod'])}(t, {_dim(r)}, keepdim=True, mask=t > 0) + t",
    lambda r: (lambda d: r.choice([f"t = torch.masked.mean(t, {d}, keepdim=True, mask=t > -1.0) + t",
                                   f"t = torch.masked.{r.choice(['log_softmax', 'softmin'])}(t, {d}, mask=t > -1.0)",
                                   f"t = torch.masked.normalize(t, 2.0, {d}, mask=t > -1.0)"]))(_dim(r)),
    lambda r: r.choice(["t = t.unflatten(1, (2, 2)).flatten(1)", "t = t.unflatten(0, (3, 1)).squeeze(1)",
                        "t = t.unflatten(-1, (2, -1)).flatten(-2)"]),
    lambda r: r.choice(["t = 2 ** t", "t = 1 - t", "t = t // 0.7", "t = 1.5 / (t.abs() + 1)", "t = t.__reversed__()",
                        "t = 3 % (t.abs() + 1)", "t = t ** 2", "t = -t.__rsub__(1)"]),
    lambda r: "t = copy.deepcopy(t.detach()) + t",
    lambda r: (lambda i: f"t = torch.func.vmap({r.choice(_ROWWISE)}, in_dims={i}, out_dims={i})(t)")(r.choice([0, 1])),
    lambda r: f"t = torch.func.grad({r.choice(_SCALARS)})(t)",
    lambda r: f"t = torch.func.vmap(torch.func.grad({r.choice(_SCALARS)}))(t)",
    lambda r: f"t = torch.func.jvp({r.choice(_ROWWISE[:4])}, (t,), (torch.ones_like(t),))[1]",
    lambda r: "t = torch.func.vmap(F.linear, in_dims=(0, None))(t, torch.eye(4) * 2)",
    lambda r: f"t = torch.func.vmap(lambda r, s: r * s, in_dims=({r.choice([0, 1])}, None), out_dims=0)(t, 2.0)"
    if r.random() < 0.5 else "t = torch.func.vmap(lambda r, s: r * s, in_dims=(1, None), out_dims=1)(t, 2.0)",
    lambda r: f"t = torch.func.vmap(lambda r: F.dropout(r, 0.5), randomness={r.choice(['same', 'different'])!r})(t)",
    lambda r: f"with torch.no_grad():\n    t = F.{r.choice(['softmax', 'log_softmax'])}(t, {_dim(r)}) + t",
    lambda r: f"t = torch.func.grad(lambda r, s: (r * s).sum(), argnums={r.choice([0, 1])})(t, t.flip(0))",
    lambda r: f"t = F.scaled_dot_product_attention(t[None], t[None], t[None], is_causal={r.choice([True, False])})[0]",
]

#: statements that append a result of another shape (or a tuple, or a Python value) to ``outs``
OTHER_SHAPES: list[Draw] = [
    lambda r: f"outs.append(F.one_hot((t.detach().abs() * 2).long().clamp(max=3), num_classes={r.choice([4, 5])}))",
    lambda r: "outs.append(F.embedding((t.detach().abs() * 2).long().clamp(max=2)[:, :2], t))",
    lambda r: f"outs.append(F.cosine_similarity(t, t.flip(0), dim={_dim(r)}, eps={_num(r, 1e-8, 0.5)}))",
    lambda r: f"outs.append(F.pairwise_distance(t, t.flip(0), p={_num(r, 1.0, 2.0)}, keepdim={r.choice([True, False])}))",
    lambda r: f"outs.append(F.pdist(t, p={_num(r, 1.0, 2.0)}))",
    lambda r: f"outs.append(torch.cdist(t, t * 2, p={_num(r, 1.0, 2.0, 0.5)}))",
    lambda r: f"outs.append(F.{r.choice(['mse_loss', 'l1_loss', 'smooth_l1_loss', 'huber_loss', 'soft_margin_loss'])}"
    f"(t, t.flip(0), reduction={r.choice(['mean', 'sum', 'none'])!r}))",
    lambda r: f"outs.append(F.cross_entropy(t, TARGET, reduction={r.choice(['mean', 'sum', 'none'])!r}, "
    f"label_smoothing={_num(r, 0.0, 0.1)}))",
    lambda r: f"outs.append(F.nll_loss(F.log_softmax(t, 1), TARGET, ignore_index={r.choice([-100, 3])}))",
    lambda r: f"outs.append(F.kl_div(F.log_softmax(t, 1), F.softmax(t.flip(0), 1), "
    f"reduction={r.choice(['batchmean', 'sum', 'mean', 'none'])!r}))",
    lambda r: "outs.append(F.binary_cross_entropy_with_logits(t, torch.sigmoid(t.flip(0)), pos_weight=torch.ones(4) * 2))",
    lambda r: "outs.append(F.binary_cross_entropy(torch.sigmoid(t), torch.sigmoid(t.flip(0))))",
    lambda r: f"outs.append(F.multi_margin_loss(t, TARGET, p={r.choice([1, 2])}, margin={_num(r, 1.0, 0.5)}))",
    lambda r: "outs.append(F.multilabel_soft_margin_loss(t, (t > 0).float()))",
    lambda r: "outs.append(F.cosine_embedding_loss(t, t.flip(0), torch.tensor([1, -1, 1])))",
    lambda r: f"outs.append(F.triplet_margin_loss(t, t.flip(0), t * 2, margin={_num(r, 1.0, 0.2)}, swap={r.choice([True, False])}))",
    lambda r: "outs.append(F.gaussian_nll_loss(t, t.flip(0), t.abs() + 0.1))",
    lambda r: f"outs.append(F.poisson_nll_loss(t, t.abs(), log_input={r.choice([True, False])}))",
    lambda r: "outs.append(F.margin_ranking_loss(t[0], t[1], torch.ones(4)))",
    lambda r: f"outs.append(F.linear(t, torch.ones(5, 4), bias={r.choice(['None', 'torch.ones(5)'])}))",
    lambda r: "outs.append(F.bilinear(t, t, torch.ones(2, 4, 4)))",
    lambda r: f"outs.append(F.conv1d(t[None], torch.ones(2, 3, 2), stride={r.choice([1, 2])}, padding={r.choice([0, 1])}))",
    lambda r: f"outs.append(F.{r.choice(['avg_pool1d', 'max_pool1d'])}(t[None], {r.choice([2, 3])}, "
    f"stride={r.choice([1, 2])}, ceil_mode={r.choice([True, False])}))",
    lambda r: "outs.append(F.max_pool1d(t[None], 2, return_indices=True))",
    lambda r: f"outs.append(F.{r.choice(['adaptive_avg_pool1d', 'adaptive_max_pool1d'])}(t[None], {r.choice([1, 2, 3])}))",
    lambda r: "outs.append(F.lp_pool1d(t[None], 2, 2))",
    lambda r: r.choice([f"outs.append(F.interpolate(t[None], scale_factor={_num(r, 2, 1.5)}, mode='nearest'))",
                        f"outs.append(F.interpolate(t[None], size={r.choice([5, 8])}, mode='linear', "
                        f"align_corners={r.choice([True, False])}))",
                        "outs.append(F.interpolate(t[None], size=2, mode='area'))"]),
    lambda r: f"outs.append(F.unfold(t.view(1, 1, 3, 4), kernel_size={r.choice([2, (2, 3)])}))",
    lambda r: f"outs.append(torch.unique(t.detach().round(), sorted=True, return_inverse={r.choice([True, False])}, "
    f"return_counts={r.choice([True, False])}))",
    lambda r: f"outs.append(t.detach().round().unique(dim={r.choice([0, 1])}))",
    lambda r: "outs.append(torch.unique_consecutive(t.detach().round().flatten(), return_counts=True))",
    lambda r: "outs.append(torch.cartesian_prod(t[0], t[1, :2]))",
    lambda r: "outs.append(torch.block_diag(t, t[:2]))",
    lambda r: f"outs.append(torch.atleast_{r.choice([1, 2, 3])}d(t))",
    lambda r: f"outs.append(torch.meshgrid(t[0], t[:, 0], indexing={r.choice(['ij', 'xy'])!r}))",
    lambda r: r.choice(["outs.append(torch.tensordot(t, t, dims=([1], [1])))", "outs.append(torch.tensordot(t, t.t(), 1))",
                        "outs.append(torch.tensordot(t, t, dims=2))"]),
    lambda r: "outs.append(torch.split(t, [1, 2], dim=0))",
    lambda r: "outs.append(torch.unravel_index(torch.tensor([5, 7]), (3, 4)))",
    lambda r: "outs.append(torch.broadcast_shapes((3, 1), (1, 4)))",
    lambda r: r.choice(["outs.append(len(t))", "outs.append(f'{t.detach().sum():.3f}')", "outs.append(t.dim_order())",
                        "outs.append(repr(t.detach()))", "outs.append(t.is_shared())"]),
    lambda r: f"outs.append(torch.func.vmap({r.choice(_REDUCTIONS)}, in_dims={r.choice([0, 1])})(t))",
    lambda r: f"outs.append(torch.func.grad({r.choice(_SCALARS)})(t[0]))",
    lambda r: f"outs.append(torch.func.jacrev({r.choice(_ROWWISE[:4])})(t[0]))",
    lambda r: "outs.append(torch.func.grad(lambda r, s: (r * s).sum(), argnums=(0, 1))(t, t.flip(0)))",
    lambda r: "outs.append(torch.func.grad(lambda r: ((r ** 2).sum(), r.mean()), has_aux=True)(t))",
    lambda r: f"outs.append(torch.func.vmap({r.choice(_REDUCTIONS)}, chunk_size={r.choice([1, 2])})(t))",
    lambda r: f"outs.append(torch.func.vmap(torch.sum, in_dims={r.choice([0, 1])})(t, dim=0))",
    lambda r: f"outs.append(torch.func.vmap(torch.{r.choice(['sum', 'mean', 'amax', 'norm'])})(t.t()))",
    lambda r: "outs.append(torch.func.vmap(torch.trace)(torch.stack([t[:, :3], t[:, 1:]])))",
    lambda r: "outs.append(torch.func.vmap(torch.outer)(t, t))",
    lambda r: f"outs.append(torch.func.vmap(torch.func.vmap({r.choice(_REDUCTIONS)}))(torch.stack([t, t * 2])))",
    lambda r: "outs.append(torch.func.vmap(lambda r: torch.split(r, 2))(t))",
    lambda r: "outs.append(torch.func.vmap(lambda r: r.norm(dim=0, keepdim=True), in_dims=1)(t))",
]


def _statement(rng: random.Random) -> list[str]:
    table = SHAPE_KEEPING if rng.random() < 0.6 else OTHER_SHAPES
    return rng.choice(table)(rng).split("\n")


def generate(rng: random.Random, seed: int) -> list[Part]:
    stmts = [_statement(rng) for _ in range(rng.randint(2, 6))]
    requires_grad = rng.choice(["True", "False"])
    x = rng.choice(["torch.randn(3, 4)", "torch.randn(4, 3).t()"])  # (contiguous or not)
    return function_program(
        PRELUDE, "x", "t = x * 1\nouts = []", stmts, result="t, outs",
        inputs=f"({x}.requires_grad_({requires_grad}),)")
