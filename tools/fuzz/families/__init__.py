"""The program families of the fuzzer, one module each, and the table that
names them: a seed picks a family (by weight) and then the program."""
from __future__ import annotations

import random

from tools.fuzz.families import (
    closures, data_dependent, dynamic, exceptions, functools_family, loops, modules, subclasses, tensor, training,
    wrappers,
)
from tools.fuzz.program import Part

#: kind -> (module with ``generate(rng, seed)``, weight)
KINDS = {
    "tensor": (tensor, 3), "module": (modules, 3), "training": (training, 2), "loops": (loops, 2),
    "exceptions": (exceptions, 2), "closures": (closures, 1), "subclasses": (subclasses, 2),
    "functools": (functools_family, 1), "dynamic": (dynamic, 2), "data_dependent": (data_dependent, 2),
    "wrappers": (wrappers, 2),
}


def generate(seed: int, kind: str | None = None) -> tuple[str, list[Part]]:
    """The kind and parts of program ``seed`` (of ``kind``, when given)."""
    rng = random.Random(seed)
    names = sorted(KINDS)
    chosen = rng.choices(names, [KINDS[k][1] for k in names])[0]
    kind = kind or chosen
    return kind, KINDS[kind][0].generate(rng, seed)
