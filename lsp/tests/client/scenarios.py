"""Scenarios run by `lsp/tests/client.rs`, one per test:
`python scenarios.py NAME PATH-TO-tessera-lsp`."""

import pathlib
import tempfile

from lsprotocol import types as t

from harness import apply_workspace_edit, main, uri_of

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
MODEL = FIXTURES / "model.tsr"


def line_of(text, needle, nth=0):
    """The (line, character) of the `nth` occurrence of `needle`."""
    index = -1
    for _ in range(nth + 1):
        index = text.index(needle, index + 1)
    line = text.count("\n", 0, index)
    return line, index - (text.rindex("\n", 0, index) + 1 if line else 0)


def hover_text(session, uri, at):
    hover = session.hover(uri, *at)
    assert hover is not None, f"no hover at {at}"
    return hover.contents.value


def open_reports_diagnostics(s):
    uri = s.open(MODEL)
    diags = s.diagnostics(uri)
    assert [d.code for d in diags] == ["E0205"], diags
    d = diags[0]
    text = MODEL.read_text()
    line, col = line_of(text, "out[i] = x[i]")
    assert (d.range.start.line, d.range.start.character) == (line, col), d.range
    assert d.severity == t.DiagnosticSeverity.Error
    assert d.message.startswith("cannot write to `out`: the parameter is not `mut`"), d.message
    assert d.code_description.href == "tessera-explain:E0205.md"
    (related,) = d.related_information
    assert related.message == "declared without `mut`"
    assert related.location.uri == uri
    assert related.location.range.start.line == line_of(text, "def fill")[0]
    explanation = s.explain("E0205")
    assert "E0205" in explanation.markdown and "mut" in explanation.markdown, explanation


def edit_updates_and_clears_diagnostics(s):
    text = "def double(x: f32[N], out: mut f32[N]):\n    out[0] = x[0] * 2.0\n"
    uri = s.open(pathlib.Path(tempfile.gettempdir()) / "tessera-lsp-edit.tsr", text)
    assert s.diagnostics(uri) == []
    # Remove `mut `: writing to `out` is now an error.
    s.change(uri, [((0, 27), (0, 31), "")])
    diags = s.diagnostics(uri)
    assert [d.code for d in diags] == ["E0205"], diags
    assert diags[0].range.start.line == 1
    # A syntax error on top of it, then both repaired in one change.
    s.change(uri, [((1, 0), (1, 0), "    y = (\n")])
    codes = [d.code for d in s.diagnostics(uri)]
    assert codes and all(c.startswith("E00") for c in codes), codes
    s.change(uri, [((1, 0), (2, 0), ""), ((0, 27), (0, 27), "mut ")])
    assert s.diagnostics(uri) == [], s.texts[uri]
    # Unicode before the edit point: positions are UTF-16 units.
    s.change(uri, [((1, 4), (1, 4), 'q = "é𝔸"\n    ')])
    assert s.diagnostics(uri) == []
    s.change(uri, [((1, 13), (1, 13), "$")])
    assert s.texts[uri].split("\n")[1] == '    q = "é𝔸"$'
    diags = s.diagnostics(uri)
    assert [d.code for d in diags] == ["E0001"], diags
    assert (diags[0].range.start.line, diags[0].range.start.character) == (1, 13), diags[0].range


def hover_shows_shapes(s):
    uri = s.open(MODEL)
    text = MODEL.read_text()
    s.diagnostics(uri)
    local = hover_text(s, uri, line_of(text, "y = op.matmul"))
    assert "y: f32[B, N]" in local, local
    assert "numerics `Training` — bf16 storage, bf16 compute, f32 accumulate" in local, local
    assert "where `D % 8 == 0`" in local, local
    assert "effects `pure`" in local, local
    line, col = line_of(text, "def project")
    function = hover_text(s, uri, (line, col + 5))
    assert "def project(x: bf16[B, D], w: bf16[D, N]) -> f32[B, N]" in function, function
    assert "where D % 8 == 0" in function, function
    assert "@numerics(Training)" in function, function
    assert "effects: `pure`" in function, function
    line, col = line_of(text, "op.matmul")
    builtin = hover_text(s, uri, (line, col + 4))
    assert "op.matmul(a, b, tile_shape = None, accumulate = None)" in builtin, builtin
    assert "Matrix product" in builtin, builtin
    line, col = line_of(text, "scale(y, 2.0)")
    callee = hover_text(s, uri, (line, col + 1))
    assert "def scale(x: f32[M, K], s: f32) -> f32[M, K]" in callee, callee
    line, col = line_of(text, "c = project")
    call = hover_text(s, uri, (line, col))
    assert "c: f32[4, 8]" in call, call
    line, col = line_of(text, "def fill(x: f32[N]")
    kernel = hover_text(s, uri, (line, col + 5))
    assert "kernel" in kernel and "effects: `pure`" in kernel, kernel


def definition_location(s):
    uri = s.open(MODEL)
    text = MODEL.read_text()
    s.diagnostics(uri)
    line, col = line_of(text, "project(a, b)")
    (target,) = [s.definition(uri, line, col + 2)]
    assert target.uri == uri
    assert (target.range.start.line, target.range.start.character) == (line_of(text, "def project")[0], 4)
    # A local: its first binding.
    line, col = line_of(text, "return z")
    target = s.definition(uri, line, col + 7)
    assert target.range.start.line == line_of(text, "z = scale")[0], target
    # Into a sibling module that is not open: read from disk.
    line, col = line_of(text, "scale(y, 2.0)")
    target = s.definition(uri, line, col + 2)
    assert target.uri == uri_of(FIXTURES / "helpers.tsr"), target
    helpers = (FIXTURES / "helpers.tsr").read_text()
    assert target.range.start.line == line_of(helpers, "def scale")[0], target
    refs = s.references(uri, line_of(text, "def project")[0], 5)
    assert sorted(r.range.start.line for r in refs) == [line_of(text, "def project")[0], line_of(text, "c = project")[0]]


def comprehension_variables_are_their_own(s):
    # A comprehension's variable is not the function's local of the same
    # name: references, definition and rename keep them apart. The first
    # clause's iterable (`range(x)`) is the function's `x`.
    text = (
        "def main():\n"
        "    x = 3\n"
        "    ys = [x * 2 for x in range(x)]\n"
        "    zs = [[x + y for y in range(2)] for x in ys]\n"
        "    print(x, ys, zs)\n"
    )
    uri = s.open(pathlib.Path(tempfile.gettempdir()) / "tessera-lsp-comprehension.tsr", text)
    assert s.diagnostics(uri) == []

    def spans(refs):
        return sorted((r.range.start.line, r.range.start.character) for r in refs)

    element = line_of(text, "x * 2")
    binding = line_of(text, "x in range")
    assert spans(s.references(uri, *element)) == [element, binding]
    target = s.definition(uri, *element)
    assert (target.range.start.line, target.range.start.character) == binding, target
    local = line_of(text, "x = 3")
    outer = [local, line_of(text, "range(x)"), line_of(text, "x, ys, zs")]
    outer[1] = (outer[1][0], outer[1][1] + 6)
    assert spans(s.references(uri, *local)) == sorted(outer)
    # The nested comprehension's `x` is the outer comprehension's.
    nested = line_of(text, "x + y")
    assert spans(s.references(uri, *nested)) == [nested, line_of(text, "x in ys")]
    # A local bound after a comprehension's variable of its name is
    # declared where it is assigned, not at the comprehension's target.
    later = "def main():\n    xs = [k for k in range(3)]\n    k = 7\n    print(k, xs)\n"
    uri = declared_at(s, "comprehension-later", later, "k, xs", "k = 7")
    # A local bound to a builtin is the local, not the builtin.
    alias = "def main():\n    g = sqrt\n    print(g(4.0), sqrt(9.0))\n"
    uri = declared_at(s, "alias", alias, "g(4.0)", "g = sqrt")
    assert "g: " in hover_text(s, uri, line_of(alias, "g(4.0)"))


def declared_at(s, name, text, use, binding):
    """Opens `text`, and checks that the local used at `use` is defined at
    `binding` and referenced there and at the use; gives the document."""
    uri = s.open(pathlib.Path(tempfile.gettempdir()) / f"tessera-lsp-{name}.tsr", text)
    assert s.diagnostics(uri) == []
    use, binding = line_of(text, use), line_of(text, binding)
    target = s.definition(uri, *use)
    assert (target.range.start.line, target.range.start.character) == binding, target
    refs = sorted((r.range.start.line, r.range.start.character) for r in s.references(uri, *use))
    assert refs == [binding, use], refs
    return uri


def code_action_fixes_the_error(s):
    uri = s.open(MODEL)
    (diag,) = s.diagnostics(uri)
    actions = s.code_actions(uri, diag)
    assert [a.title for a in actions] == ["make `out` writable"], actions
    (action,) = actions
    assert action.kind == t.CodeActionKind.QuickFix
    assert action.is_preferred
    apply_workspace_edit(s, action.edit)
    assert "out: mut f32[N]" in s.texts[uri]
    assert s.diagnostics(uri) == []


def completion_and_signature_help(s):
    uri = s.open(MODEL)
    text = MODEL.read_text()
    s.diagnostics(uri)
    line, col = line_of(text, "    return z")
    s.change(uri, [((line, 0), (line, 0), "    q = op.\n")])
    items = s.completion(uri, line, len("    q = op."))
    by_label = {i.label: i for i in items}
    assert "matmul" in by_label and "softmax" in by_label, sorted(by_label)
    assert by_label["matmul"].detail == "op.matmul(a, b, tile_shape = None, accumulate = None)"
    assert "Matrix product" in by_label["matmul"].documentation.value
    assert "thread_id" not in by_label
    s.change(uri, [((line, 0), (line + 1, 0), "    q = \n")])
    items = {i.label: i for i in s.completion(uri, line, len("    q = "))}
    assert items["y"].detail == "y: f32[B, N]", items["y"]
    assert items["x"].detail == "x: bf16[B, D]", items["x"]
    assert items["project"].kind == t.CompletionItemKind.Function
    assert "tile" in items and "range" in items and "bf16" in items
    s.change(uri, [((line, 0), (line + 1, 0), "    q = op.matmul(x, \n")])
    help = s.signature_help(uri, line, len("    q = op.matmul(x, "))
    (sig,) = help.signatures
    assert sig.label == "op.matmul(a, b, tile_shape = None, accumulate = None)"
    assert help.active_parameter == 1
    start, end = sig.parameters[1].label
    assert sig.label[start:end] == "b"
    s.change(uri, [((line, 0), (line + 1, 0), "    q = scale(y, \n")])
    help = s.signature_help(uri, line, len("    q = scale(y, "))
    assert help.signatures[0].label == "def scale(x: f32[M, K], s: f32) -> f32[M, K]", help
    assert help.active_parameter == 1
    # A list's and a string's methods, after `.` on a local of main.
    s.change(uri, [((line, 0), (line + 1, 0), "")])
    text = MODEL.read_text()
    line, _ = line_of(text, "    print(c)")
    s.change(uri, [((line, 0), (line, 0), '    names = ["a"]\n    names.\n')])
    items = {i.label: i for i in s.completion(uri, line + 1, len("    names."))}
    assert {"append", "pop", "extend"} <= set(items), sorted(items)
    assert items["append"].kind == t.CompletionItemKind.Method
    assert "at the end" in items["append"].documentation.value
    s.change(uri, [((line + 1, 0), (line + 2, 0), '    label = "x"\n    label.\n')])
    items = {i.label: i for i in s.completion(uri, line + 2, len("    label."))}
    assert {"startswith", "split", "join"} <= set(items), sorted(items)
    # Hover on a method call shows what the method does.
    s.change(uri, [((line + 2, 0), (line + 3, 0), "    names.append(label)\n")])
    method = hover_text(s, uri, (line + 2, len("    names.ap")))
    assert "names.append(…)" in method and "at the end" in method, method


def outline_hints_and_tokens(s):
    uri = s.open(MODEL)
    text = MODEL.read_text()
    s.diagnostics(uri)
    symbols = {sym.name: sym for sym in s.symbols(uri)}
    assert symbols["project"].kind == t.SymbolKind.Function
    assert symbols["project"].detail == "def project(x: bf16[B, D], w: bf16[D, N]) -> f32[B, N]"
    assert symbols["P"].kind == t.SymbolKind.Variable
    assert {"fill", "main", "scale", "op"} <= set(symbols)
    hints = {(h.position.line, h.label) for h in s.inlay_hints(uri)}
    assert (line_of(text, "y = op.matmul")[0], ": f32[B, N]") in hints, hints
    assert (line_of(text, "a = zeros")[0], ": bf16[4, 16]") in hints, hints
    assert (line_of(text, "c = project")[0], ": f32[4, 8]") in hints, hints
    legend = s.capabilities.semantic_tokens_provider.legend.token_types
    data = s.semantic_tokens(uri).data
    tokens = {}
    line = col = 0
    for i in range(0, len(data), 5):
        dl, dc, length, kind = data[i : i + 4]
        line, col = line + dl, (col + dc if dl == 0 else dc)
        tokens[text.split("\n")[line][col : col + length]] = legend[kind]
    assert tokens["project"] == "function", tokens
    assert tokens["matmul"] == "function", tokens
    assert tokens["op"] == "namespace", tokens
    assert tokens["bf16"] == "type", tokens
    assert tokens["D"] == "typeParameter", tokens
    assert tokens["w"] == "parameter", tokens
    assert tokens["kernel"] == "decorator", tokens


def modules_created_and_deleted_on_disk(s):
    folder = pathlib.Path(tempfile.mkdtemp(prefix="tessera-lsp-watch-"))
    main, helpers = folder / "main.tsr", folder / "helpers.tsr"
    main.write_text("from helpers import scale\n\ndef f(x: f32[N]) -> f32[N]:\n    return scale(x, 2.0)\n")
    helper_text = "def scale(x: f32[N], s: f32) -> f32[N]:\n    return x * s\n"
    uri = s.open(main)
    assert [d.code for d in s.diagnostics(uri)] == ["E0105"]
    # Created: the import resolves, and the diagnostics are published anew.
    helpers.write_text(helper_text)
    seen = s.published_count(uri)
    s.files_changed([(helpers, t.FileChangeType.Created)])
    assert s.next_diagnostics(uri, seen) == []
    # Deleted: the import is unresolved again, as `tessera check` says.
    helpers.unlink()
    seen = s.published_count(uri)
    s.files_changed([(helpers, t.FileChangeType.Deleted)])
    assert [d.code for d in s.next_diagnostics(uri, seen)] == ["E0105"]
    # Created once more, with a different signature: checked against it.
    helpers.write_text(helper_text.replace("s: f32", "s: f32, t: f32"))
    seen = s.published_count(uri)
    s.files_changed([(helpers, t.FileChangeType.Created)])
    assert [d.code for d in s.next_diagnostics(uri, seen)] == ["E0204"]


def modules_that_are_not_open(s):
    folder = pathlib.Path(tempfile.mkdtemp(prefix="tessera-lsp-closed-"))
    main, broken = folder / "main.tsr", folder / "brk.tsr"
    broken.write_text("def f() -> int\n    return 1\n")
    main.write_text("from brk import f\n\ndef main():\n    print(f())\n")
    # A module an open file imports is checked with it, as `tessera check`
    # does: its errors are published for it (a module that did not parse
    # had been reported nowhere), and cleared when it is fixed.
    uri = s.open(main)
    assert s.diagnostics(uri) == []
    assert [d.code for d in s.next_diagnostics(uri_of(broken), 0)] == ["E0031"]
    broken.write_text("def f() -> int:\n    return 1\n")
    seen = s.published_count(uri_of(broken))
    s.files_changed([(broken, t.FileChangeType.Changed)])
    assert s.next_diagnostics(uri_of(broken), seen) == []
    # A module open in the editor and never saved is a module while it is
    # open; closed, it is none (it had stayed one, empty).
    user, unsaved = folder / "user.tsr", folder / "ops.tsr"
    user_uri = s.open(user, "from ops import twice\n\ndef main():\n    print(twice(1))\n")
    assert [d.code for d in s.diagnostics(user_uri)] == ["E0105"]
    seen = s.published_count(user_uri)
    ops_uri = s.open(unsaved, "def twice(v: int) -> int:\n    return 2 * v\n")
    assert s.next_diagnostics(user_uri, seen) == []
    seen = s.published_count(user_uri)
    s.close_doc(ops_uri)
    (missing,) = s.next_diagnostics(user_uri, seen)
    assert missing.code == "E0105" and "cannot find module `ops`" in missing.message, missing
    # A reversed range of inlay hints is the range between its ends.
    # A primary label that says what the title says is not repeated.
    typo = s.open(folder / "typo.tsr", "DEF main():\n    pass\n")
    first = s.diagnostics(typo)[0].message.split("\n")
    assert len(first) == len(set(first)), first
    local = s.open(folder / "local.tsr", "def g(x: f32[N]) -> f32[N]:\n    y = x * 2.0\n    return y\n")
    hints = s.inlay_hints(local)
    assert hints and s.inlay_hints(local, (10_000, 0), (0, 0)) == hints


def unnormalized_uris_find_sibling_modules(s):
    # An editor may send `dir/./model.tsr` or `dir//model.tsr`: the import
    # of `helpers` beside it resolves as for the plain path (it was E0105).
    text = MODEL.read_text()
    plain = uri_of(MODEL)
    folder, name = plain.rsplit("/", 1)
    for uri in [f"{folder}/./{name}", f"{folder}//{name}", f"{folder}/../{folder.rsplit('/', 1)[1]}/{name}"]:
        s.open_uri(uri, text)
        assert [d.code for d in s.diagnostics(uri)] == ["E0205"], uri
        line, col = line_of(text, "scale(y, 2.0)")
        target = s.definition(uri, line, col + 2)
        assert target.uri == uri_of(FIXTURES / "helpers.tsr"), target


def module_members(s):
    # `ops.f`, `ops.WIDTH` and `pkg.norms.f` go to their definitions in the
    # module, hover shows them, references find the uses through the
    # module, and completion after `ops.` lists its functions and constants.
    folder = pathlib.Path(tempfile.mkdtemp(prefix="tessera-lsp-members-"))
    (folder / "pkg").mkdir()
    ops_text = "WIDTH = 4\n\ndef twice(v: int) -> int:\n    return 2 * v\n"
    norms_text = "def unit(x: f32[N]) -> f32[N]:\n    return x / sqrt(op.sum(x * x))\n"
    (folder / "ops.tsr").write_text(ops_text)
    (folder / "pkg" / "norms.tsr").write_text(norms_text)
    main_text = (
        "import ops\n"
        "import pkg.norms\n"
        "from ops import WIDTH\n"
        "\n"
        "def main():\n"
        "    print(ops.twice(ops.WIDTH), WIDTH)\n"
        "    print(pkg.norms.unit(arange(3) * 1.0))\n"
    )
    uri = s.open(folder / "main.tsr", main_text)
    assert s.diagnostics(uri) == []
    ops_uri = uri_of(folder / "ops.tsr")
    line, col = line_of(main_text, "twice(ops")
    target = s.definition(uri, line, col + 1)
    assert (target.uri, target.range.start.line) == (ops_uri, line_of(ops_text, "def twice")[0]), target
    for needle, nth in [("WIDTH)", 0), ("WIDTH", 0), ("WIDTH", 2)]:
        line, col = line_of(main_text, needle, nth)
        target = s.definition(uri, line, col + 1)
        assert (target.uri, target.range.start.line) == (ops_uri, 0), (needle, nth, target)
    line, col = line_of(main_text, "unit(")
    target = s.definition(uri, line, col + 1)
    assert target.uri == uri_of(folder / "pkg" / "norms.tsr"), target
    assert "WIDTH = 4" in hover_text(s, uri, line_of(main_text, "WIDTH)"))
    line, col = line_of(main_text, "twice(ops")
    shown = hover_text(s, uri, (line, col + 1))
    assert "def twice(v: i64) -> i64" in shown, shown
    refs = s.references(uri, *line_of(main_text, "WIDTH)"))
    places = sorted((r.uri == ops_uri, r.range.start.line) for r in refs)
    assert places == [(False, 2), (False, 5), (False, 5), (True, 0)], places
    line, _ = line_of(main_text, "    print(pkg")
    s.change(uri, [((line, 0), (line, 0), "    q = ops.\n")])
    items = {i.label: i for i in s.completion(uri, line, len("    q = ops."))}
    assert {"twice", "WIDTH"} <= set(items), sorted(items)
    assert items["WIDTH"].kind == t.CompletionItemKind.Constant
    s.change(uri, [((line, 0), (line + 1, 0), "    q = pkg.norms.\n")])
    items = {i.label for i in s.completion(uri, line, len("    q = pkg.norms."))}
    assert "unit" in items, sorted(items)


SCENARIOS = {
    f.__name__: f
    for f in [
        open_reports_diagnostics,
        edit_updates_and_clears_diagnostics,
        hover_shows_shapes,
        definition_location,
        comprehension_variables_are_their_own,
        code_action_fixes_the_error,
        completion_and_signature_help,
        outline_hints_and_tokens,
        modules_created_and_deleted_on_disk,
        modules_that_are_not_open,
        unnormalized_uris_find_sibling_modules,
        module_members,
    ]
}

if __name__ == "__main__":
    main(SCENARIOS)
