"""A helper module: functions the inlining tests call across a module boundary
(their globals are this module's, not the caller's)."""
import torch

SCALE = 2.0
CALLS = 0
OFFSET = torch.ones(3)


def scaled(x):
    return x * SCALE + OFFSET


def count_call(x):
    global CALLS
    CALLS += 1
    return x + CALLS


def apply_twice(fn, x):
    return fn(fn(x))


class Affine:
    def __init__(self, weight, bias):
        self.weight = weight
        self.bias = bias

    def __call__(self, x):
        return x * self.weight + self.bias

    def shifted(self, x, shift=1.0):
        return self(x) + shift
