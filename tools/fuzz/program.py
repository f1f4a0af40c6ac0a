"""A generated program: module source made of fixed text and blocks of
statements the minimiser may drop.

A program is a list of *parts*: a string is fixed source (a class header, the
driver's frame), a :class:`Block` is a run of statements (each a list of
source lines) at one indentation. :func:`render` joins the parts into module
source; :mod:`tools.fuzz.minimize` removes statements from blocks while the
program still fails the same way. Every program starts with the harness
import and defines ``main(compile)`` (see :mod:`tools.fuzz.harness`).
"""
from __future__ import annotations

import dataclasses
import random
from typing import Callable, Union


@dataclasses.dataclass
class Block:
    """Statements at ``indent`` spaces; the last ``keep`` are never dropped (a return)."""

    indent: int
    stmts: list[list[str]]
    keep: int = 0


Part = Union[str, Block]

HEADER = "from tools.fuzz.harness import *  # noqa: F401,F403\n"


def render(parts: list[Part]) -> str:
    """Module source of ``parts`` (an emptied block becomes ``pass``)."""
    out = [HEADER]
    for part in parts:
        if isinstance(part, str):
            out.append(part if part.endswith("\n") else part + "\n")
            continue
        pad = " " * part.indent
        lines = [line for stmt in part.stmts for line in stmt] or ["pass"]
        out.append("".join(pad + line + "\n" for line in lines))
    return "".join(out)


def pick(rng: random.Random, table: list, k: int = 1) -> list:
    """``k`` entries of ``table`` drawn with replacement; an entry is a value
    or ``(value, weight)``."""
    values = [e[0] if isinstance(e, tuple) else e for e in table]
    weights = [e[1] if isinstance(e, tuple) else 1 for e in table]
    return rng.choices(values, weights, k=k)


def statements(rng: random.Random, table: list, low: int, high: int) -> list[list[str]]:
    """Between ``low`` and ``high`` statements drawn from ``table`` (each entry
    the source of one statement, its lines joined by newlines, optionally with
    a weight)."""
    return [source.split("\n") for source in pick(rng, table, rng.randint(low, high))]


Generator = Callable[[random.Random, int], list[Part]]


def function_program(prelude: str, params: str, start: str, stmts: list[list[str]], inputs: str,
                     result: str = "t", record: str = "", compile_args: str = "", calls: int = 2) -> list[Part]:
    """A program ``program(<params>)`` whose body is ``start`` (fixed lines,
    four spaces in), then ``stmts``, then ``return <result>``; ``main``
    compiles it (``compile(program<compile_args>)``) and calls it ``calls``
    times, each on a fresh tuple of arguments ``inputs`` (an expression that
    may read ``call``, the call's number), recording the results, the
    arguments as the calls left them, and the entries of ``record`` (source of
    ``, "key": value`` pairs)."""
    head = f"def program({params}):\n" + "".join(f"    {line}\n" for line in start.split("\n") if line)
    driver = (
        "\n\ndef main(compile):\n"
        f"    fn = compile(program{compile_args})\n"
        "    out, args = [], []\n"
        f"    for call in range({calls}):\n"
        f"        a = {inputs}\n"
        "        args.append(a)\n"
        "        out.append(attempt(fn, *a))\n"
        f'    return {{"out": out, "args": args{record}}}\n'
    )
    return [prelude, head, Block(4, stmts + [[f"return {result}"]], keep=1), driver]
