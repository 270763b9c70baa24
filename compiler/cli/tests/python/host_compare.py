"""Runs random host programs with CPython and with `tessera run` and compares.

Usage: host_compare.py TESSERA WORKDIR SEED COUNT

Each program is a `def main():` over ints, floats, strings, lists, tuples
and dicts: arithmetic (`+ - * / // % **`), comparisons, `in`, conditional
expressions, indexing and slicing with steps, `min`/`max` of several values
or of a list, `abs`, `len`, `sum`, `sorted`, string methods, loops that
`append` to a list and assign dict entries, `items()`, `str`, `is` and
`is not`, f-strings
with format specs, and lists and dicts changed through another name or a
function's parameter (list methods, item assignment, `+=`, `[x] * n`,
`del`, `sort`, `remove`), and comprehensions over them.
Programs CPython rejects are skipped; for the others both must print the
same lines. Exits 1 with the first differences, 0 with "host: ok N of
COUNT" (N the programs compared).
"""

import random
import subprocess
import sys
from pathlib import Path


class Gen:
    def __init__(self, seed):
        self.rng = random.Random(seed)

    def num(self, d=0):
        r = self.rng
        if d > 3 or r.random() < 0.3:
            return r.choice([str(r.randint(-9, 9)), repr(r.choice([0.5, -1.25, 3.0, 0.1, 2.5e-3, 1e20, 7.0, -3.5])),
                             "a", "b", "len(xs)", "len(d)", "xs[0]", "xs[-1]", "t[1]", 'd["k"]', "sum(xs)"])
        k = r.randrange(9)
        x, y = self.num(d + 1), self.num(d + 1)
        if k < 4:
            return f"({x} {r.choice(['+', '-', '*'])} {y})"
        if k == 4:
            return f"({x} {r.choice(['/', '//', '%'])} {r.choice(['3', '2.5', '-4', '7'])})"
        if k == 5:
            if r.random() < 0.5:
                return f"{r.choice(['min', 'max'])}({x}, {y}, {self.num(d + 1)})"
            return f"{r.choice(['min', 'max'])}(xs)"
        if k == 6:
            return f"abs({x})"
        if k == 7:
            return f"({x} ** {r.choice(['2', '3', '0', '-1'])})" if r.random() < 0.5 else f"-{x}"
        return f"({x} if {self.boolean(d + 1)} else {y})"

    def boolean(self, d=0):
        r = self.rng
        k = r.randrange(6)
        if k == 5:
            x, y = r.choice(["xs", "t", "d", "s", "a", "None"]), r.choice(["xs", "t", "d", "None"])
            return f"({x} {r.choice(['is', 'is not'])} {y})"
        if k < 2:
            return f"({self.num(d + 1)} {r.choice(['<', '<=', '==', '!=', '>', '>='])} {self.num(d + 1)})"
        if k == 2:
            return f"({self.num(d + 1)} in {r.choice(['xs', 't'])})"
        if k == 3:
            return "(" + r.choice(["2", "5", "7", '"k"']) + " in d)"
        return f"(not {r.choice(['xs', 't', 'd', 's', 'a', '0', '0.0', '[]'])})"

    def seq(self):
        r = self.rng
        k = r.randrange(8)
        if k == 0:
            return f"xs[{r.choice(['1:', ':2', '::-1', '1::2', '-2:', '::3', '5:'])}]"
        if k == 1:
            return f"t[{r.choice(['1:', ':2', '::-1', '1::2'])}]"
        if k == 2:
            return "s[" + r.choice(["1:", ":2", "::-1", "1::2", "-3:", "0:5:2"]) + "]"
        if k == 3:
            return "xs + [" + ", ".join(self.num(2) for _ in range(r.randint(0, 2))) + "]"
        if k == 4:
            return "t + (" + self.num(2) + ",)"
        if k == 5:
            return "[" + ", ".join(self.num(2) for _ in range(r.randint(0, 3))) + "]"
        if k == 6:
            return "(" + ", ".join(self.num(2) for _ in range(r.randint(2, 3))) + ")"
        if r.random() < 0.5:
            return r.choice(['s.upper()', 's.replace("l", "L")', '"-".join(s)', 's.split("l")', '" a b ".split()',
                             '" x ".strip()', 's.find("l")', 's.count("l")', 's.startswith("he")', '", ".join(["x", s])'])
        return 's + "' + r.choice(["!", "", "ab"]) + '"'

    def comprehensions(self):
        """List, dict and generator comprehensions over the program's
        values, with conditions, tuple targets, nesting, and a local of the
        same name that they leave alone."""
        r = self.rng
        lines = ["    x = \"kept\""]
        for _ in range(r.randint(1, 3)):
            source, target = r.choice([
                ("xs", "x"), ("t", "x"), (f"range({r.randint(0, 5)})", "x"), ("d", "x"), ("s", "x"),
                ("[a, b]", "x"), ("zip(xs, t)", "i, x"), ("enumerate(t)", "i, x"), ("d.items()", "i, x"),
            ])
            elt = r.choice(["x", f"(x, {self.num(2)})", f"x * {r.randint(-2, 3)}", "str(x)", f"[x, {self.num(2)}]",
                            f"x if {self.boolean(2)} else {self.num(2)}"])
            cond = r.choice(["", " if x", f" if {self.boolean(2)}", " if x != 2", " if not x if x != 0"])
            k = r.randrange(5)
            if k == 0:
                lines.append(f"    print([{elt} for {target} in {source}{cond}])")
            elif k == 1:
                lines.append(f"    print({{str(x): {elt} for {target} in {source}{cond}}})")
            elif k == 2:
                fold = r.choice(["sum", "len", "sorted", "list", "tuple", "any", "all", "min", "max"])
                if fold == "len":
                    lines.append(f"    print(len([{elt} for {target} in {source}{cond}]))")
                else:
                    lines.append(f"    print({fold}({elt} for {target} in {source}{cond}))")
            elif k == 3:
                lines.append(f"    print([[{elt}, y] for {target} in {source}{cond} for y in range({r.randint(0, 2)})])")
            else:
                lines.append(f'    print(", ".join(str({elt}) for {target} in {source}{cond}))')
        lines.append("    print(x)")
        return lines

    def builtins(self):
        """Python's builtins over the program's values: conversions,
        `round`, `divmod`, `pow`, `reversed`, `zip` and `enumerate` with
        their options, `in` on strings, sorting of tuples, and `key=`."""
        r = self.rng
        n = self.num(2)
        return ["    print(" + r.choice([
            f"int({n}) if abs({n}) < 1e18 else 0", f"round({n}) if abs({n}) < 1e18 else 0", f"round({n}, {r.randint(0, 3)})", f"divmod({n}, {r.choice(['3', '-2', '2.5'])})",
            f"pow({r.randint(-3, 5)}, {r.randint(0, 4)})", "list(reversed(xs))", "list(zip(xs, t, s))",
            f"list(enumerate(s, start={r.randint(-2, 3)}))", '"l" in s', '"x" not in s', '"" in s', "sorted(zip(t, xs))", "t.count(4)",
            f"str({n}) + s", f"bool({n})", "abs(-len(s))", f"max(xs + [{n}])", "list(d.values())",
            f"[{n}] * {r.randint(-1, 2)}", f"s[{r.randint(-6, 6)}:{r.randint(-6, 6)}]", "t.index(5) if 5 in t else -1", "xs.count(2)",
            f"{n} != {n}", "sorted(xs, key=abs)", "max(t, key=abs)", "sorted(d, key=str)", f"min(xs + [{n}], key=abs)",
            "sorted(s, key=str, reverse=True)", "max(len(s), 3, key=abs)",
        ]) + ")"]

    def program(self):
        r = self.rng
        lines = [
            "def grow(items, table, v):",
            "    items.append(v)",
            "    items[0] = v",
            "    table[v] = len(items)",
            "",
            "def main():",
            "    a = 7",
            "    b = -2.5",
            "    xs = [1, 2, 3]",
            '    d = {"k": 1, 2: "two", 5: 0.5}',
            "    t = (4, 5, 6)",
            '    s = "hello"',
        ]
        for _ in range(8):
            k = r.randrange(4)
            e = self.num() if k < 2 else self.boolean() if k == 2 else self.seq()
            lines.append(f"    print({e})")
        if r.random() < 0.5:
            lines.append(f"    for i in range({r.randint(0, 4)}):")
            lines.append(f"        xs.append(i * {r.randint(1, 3)})")
            lines.append(f"        d[i] = {self.num(2)}")
            lines.append("    print(xs, d, len(d))")
        if r.random() < 0.5:
            lines.append(f'    print(f"{{a}} {{b:.3f}} {{xs!r}} {{s:>8}} {{{self.num(2)}:g}} {{{self.num(2)}:+.2e}}")')
        if r.random() < 0.5:
            lines.append("    ys = xs")
            lines.append("    e = d")
            for _ in range(r.randint(1, 4)):
                lines.append("    " + r.choice([
                    f"ys.append({self.num(2)})", f"xs += [{self.num(2)}]", f"ys[{r.choice(['0', '-1', '1'])}] = {self.num(2)}",
                    "xs.pop()", f"ys.insert({r.randint(-4, 4)}, {self.num(2)})", "xs.extend(t)", "ys.reverse()",
                    "e[" + r.choice(["2", "7", '"k"']) + "] = " + self.num(2), f"grow(ys, e, {r.randint(0, 9)})",
                    "zs = ys.copy()", "ys.clear()", "e.pop(2, None)", 'e.setdefault("k", 0)',
                    f"e.update({{7: {self.num(2)}}})", "e.copy().clear()", "del ys[0]", "del e[2]",
                    f"ys.sort(reverse={r.choice(['True', 'False'])})", f"xs.remove({r.choice(['1', '2', 'a', 'b'])}) if {r.choice(['1', '2', 'a', 'b'])} in xs else None"]))
            lines.append(f"    grid = [[0] * 2] * {r.randint(1, 3)}")
            lines.append(f"    grid[0][1] = {self.num(2)}")
            lines.append("    print(xs, ys, d, e, xs == ys, xs is ys, e is d, len(e), grid, xs.count(1))")
        if r.random() < 0.6:
            lines.extend(self.comprehensions())
        for _ in range(r.randint(0, 3)):
            lines.extend(self.builtins())
        if r.random() < 0.3:
            lines.append("    total = 0")
            lines.append("    for k, v in d.items():")
            lines.append("        total += len(str(v))")
            lines.append("    print(total, sorted(xs, reverse=True), sorted(t), sorted(s))")
        return "\n".join(lines) + "\n"


def main():
    tessera, workdir, seed, count = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    gen = Gen(seed)
    compared = 0
    for i in range(count):
        program = gen.program()
        py_file, tsr_file = workdir / "p.py", workdir / "p.tsr"
        py_file.write_text(program + "\nmain()\n")
        tsr_file.write_text(program)
        py = subprocess.run([sys.executable, str(py_file)], capture_output=True, text=True, timeout=30)
        if py.returncode != 0:
            continue
        ts = subprocess.run([tessera, "run", str(tsr_file)], capture_output=True, text=True, timeout=60)
        if ts.returncode != 0 or ts.stdout != py.stdout:
            print(f"seed {seed}, program {i}: tessera and CPython differ\n{program}")
            for got, want in zip(ts.stdout.split("\n"), py.stdout.split("\n")):
                if got != want:
                    print(f"  tessera: {got!r}\n  python:  {want!r}")
            print(ts.stderr[-3000:])
            sys.exit(1)
        compared += 1
    print(f"host: ok {compared} of {count}")


main()
