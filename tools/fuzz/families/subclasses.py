"""User subclasses of builtins (set, frozenset, str, int, float, bytes, tuple,
list, dict, OrderedDict, defaultdict, deque, Counter), some overriding the
methods bytegraph models for the base type, made in the frame or passed in
and mutated; their types, attributes and contents are compared.

``program(x, objs)``: a (3, 4) tensor and a dict of subclass instances.
"""
from __future__ import annotations

import random

from tools.fuzz.program import Part, function_program, statements

PRELUDE = '''\
import io

OUT = io.StringIO()


class MySet(set):
    def total(self):
        return sum(self)


class MyFrozen(frozenset):
    pass


class MyStr(str):
    def shout(self):
        return self.upper() + "!"


class MyInt(int):
    def __add__(self, other):
        return MyInt(int(self) + int(other) + 1)


class MyFloat(float):
    def half(self):
        return self / 2


class MyBytes(bytes):
    pass


class MyTuple(tuple):
    def second(self):
        return self[1]


class MyList(list):
    def append(self, value):
        super().append(value)
        self.appends = getattr(self, "appends", 0) + 1


class MyDict(dict):
    def __getitem__(self, key):
        return super().__getitem__(key) * 2


class Missing(dict):
    def __missing__(self, key):
        return 0


class MyOD(collections.OrderedDict):
    pass


class MyDD(collections.defaultdict):
    pass


class MyDeque(collections.deque):
    pass


class MyCounter(collections.Counter):
    pass


class LenList(list):
    def __len__(self):
        return super().__len__() + 10


class BackTuple(tuple):
    def __iter__(self):
        return iter(tuple(self[i] for i in range(len(self) - 1, -1, -1)))


class OneHash(str):
    def __hash__(self):
        return 1

    def __eq__(self, other):
        return str.__eq__(self, other)


def make_objs(x):
    return {"set": MySet({1, 2}), "list": MyList([x]), "int": MyInt(2), "str": MyStr("ab"),
            "dict": MyDict(k=x), "counter": MyCounter("aab"), "deque": MyDeque([1.0], maxlen=3),
            "tuple": MyTuple((x, 2)), "float": MyFloat(1.5), "od": MyOD(a=1, b=2), "dd": MyDD(list)}
'''

STATEMENTS = [
    "s = MySet([1, 2, 3])\ns.add(4)\nt = t * s.total() + len(s)",
    "f = MyFrozen({1, 2})\nt = t + (2 in f) + len(f | {5})\nres['frozen'] = type(f | {5}).__name__",
    "ms = MyStr('ab')\nt = t * len(ms.shout())\nres['str'] = ms.shout()",
    "mi = MyInt(3)\nt = t * (mi + 1)\nres['int'] = mi + 1",
    "mf = MyFloat(3.0)\nt = t * mf.half()\nres['float'] = type(mf * 2).__name__",
    "mb = MyBytes(b'xy')\nt = t + len(mb) + mb[0]",
    "mt = MyTuple((t, t * 2))\nt = mt.second() + mt[0]",
    "ml = MyList()\nml.append(t)\nml.append(t * 2)\nt = ml[-1] + ml.appends",
    "md = MyDict(a=t)\nt = md['a'] + 1",
    "od = MyOD(a=t, b=t * 2)\nod.move_to_end('a')\nt = list(od.values())[0] + 1\nres['od'] = list(od)",
    "dd = MyDD(list)\ndd['k'].append(t)\nt = dd['k'][0] * len(dd)",
    "dq = MyDeque([t], maxlen=2)\ndq.append(t + 1)\ndq.append(t + 2)\nt = dq[0] + len(dq)",
    "cn = MyCounter('abca')\nt = t * cn['a'] + len(cn.most_common(1))",
    "t = t + Missing()['nothing']",
    "t = t * len(LenList([1]))",
    "a, b = BackTuple((1, 2))\nt = t * a - b",
    "hs = {OneHash('a'): t}\nt = hs['a'] + 1",
    "t = t + objs['list'][0]",
    "objs['list'].append(t)",
    "t = t * objs['int']",
    "t = t + len(objs['str']) + len(objs['str'].shout())",
    "objs['dict']['new'] = t",
    "t = t + objs['dict']['k']",
    "t = t * objs['counter']['a']\nobjs['counter'].update('b')",
    "objs['deque'].appendleft(float(t.sum() > 0))\nt = t + len(objs['deque'])",
    "t = t + isinstance(objs['set'], set) + (type(objs['tuple']).__name__ == 'MyTuple')",
    "t = t * objs['tuple'].second() + objs['tuple'][0]",
    "t = t * objs['float'].half()",
    "objs['set'].add(len(objs['set']) + 1)\nt = t * objs['set'].total()",
    "objs['od']['c'] = 3\nobjs['od'].move_to_end('a')\nres['od_keys'] = list(objs['od'])",
    "objs['dd']['z'].append(t)\nt = t + len(objs['dd']['z'])",
    "print(type(objs['int']).__name__, file=OUT)\nt = t + 1",
    "res['types'] = [type(v).__name__ for v in objs.values()]",
    "t = t + sum(objs['counter'].values())",
    "t = t + sum(x for x in objs['deque'])",
]


def generate(rng: random.Random, seed: int) -> list[Part]:
    stmts = statements(rng, STATEMENTS, 2, 6)
    return function_program(
        PRELUDE, "x, objs", "t = x * 1\nres = {}", stmts, result="t, res",
        inputs="(torch.randn(3, 4), make_objs(torch.randn(3, 4)))", record=', "printed": OUT.getvalue()')
