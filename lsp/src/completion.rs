//! Completion and signature help. Names come from the checker's results
//! (the locals inference bound, the item tree, the imports) and builtins
//! from the op table, with their signatures and documentation. The text
//! being typed is usually broken, so what is around the cursor is read from
//! the text itself; what the names mean still comes from the queries.

use tessera_hir::builtins::{self, Builtin, Shape};
use tessera_hir::db as q;
use tessera_hir::ty::{Ty, ALL_DTYPES};
use tessera_hir::{Db, SourceFile};
use tower_lsp_server::ls_types::{
    CompletionItem, CompletionItemKind, Documentation, MarkupContent, MarkupKind, ParameterInformation, ParameterLabel,
    Position, SignatureHelp, SignatureInformation, Uri,
};

use crate::analysis::{self, ident_start, Function, Symbol};
use crate::convert;
use crate::hover::{builtin_label, parameter_labels, return_label, signature_label};
use crate::workspace::Snapshot;

const KEYWORDS: [&str; 27] = [
    "def", "return", "if", "elif", "else", "for", "in", "while", "with", "as", "import", "from", "pass", "break",
    "continue", "and", "or", "not", "assert", "where", "effects", "mut", "True", "False", "None", "is", "lambda",
];

/// What `.` after a tensor offers.
const TENSOR_PROPERTIES: [(&str, &str); 4] = [
    ("T", "the transpose of the last two dims"),
    ("shape", "the dims, as a tuple"),
    ("ndim", "the number of dims"),
    ("dtype", "the element type"),
];

pub fn completion(snapshot: &Snapshot, uri: &Uri, pos: Position) -> Vec<CompletionItem> {
    let Some(file) = snapshot.file_of(uri) else {
        return Vec::new();
    };
    let db = snapshot.db();
    let source = snapshot.source(file);
    let text = snapshot.text(file);
    let offset = convert::offset(&snapshot.line_index(file), pos);
    let start = ident_start(text, offset as usize);
    let func = enclosing_function(db, source, text, offset);
    match text[..start].strip_suffix('.') {
        Some(before) => members(db, source, func, dotted_tail(before)),
        None => names(db, source, func),
    }
}

/// The names joined by dots at the end of `text` (`pkg.norms` of
/// `q = pkg.norms`), the base of a member completion.
fn dotted_tail(text: &str) -> &str {
    let mut start = ident_start(text, text.len());
    while let Some(dot) = start.checked_sub(1).filter(|&d| text.as_bytes()[d] == b'.') {
        let before = ident_start(text, dot);
        if before == dot {
            break;
        }
        start = before;
    }
    &text[start..]
}

/// The function whose body the cursor is in. A cursor on an indented line
/// after the last statement of a body still counts: that is where the next
/// statement is being typed.
fn enclosing_function<'db>(db: &'db dyn Db, file: SourceFile, text: &str, offset: u32) -> Option<Function<'db>> {
    if let Some(func) = analysis::function_at(db, file, offset) {
        return Some(func);
    }
    let line_start = text[..offset as usize].rfind('\n').map_or(0, |i| i + 1);
    if !text[line_start..].starts_with([' ', '\t']) {
        return None;
    }
    let func = analysis::functions(db, file)
        .into_iter()
        .rev()
        .find(|f| f.offset <= offset)?;
    let end = func.absolute(func.def.span).end;
    let between = analysis::top_level(db, file).any(|(base, s)| {
        let at = base + s.span.start;
        at > end && at <= offset
    });
    (!between).then_some(func)
}

/// Completions after `base.`: a namespace's builtins, a tensor's
/// attributes, a string's or a list's methods, a module's functions.
fn members(db: &dyn Db, file: SourceFile, func: Option<Function<'_>>, base: &str) -> Vec<CompletionItem> {
    let local_ty = func.and_then(|f| {
        let sig = f.signature(db);
        sig.param(base)
            .map(|p| &p.ty)
            .or_else(|| f.body(db).locals.iter().find(|(n, _, _)| n == base).map(|(_, _, t)| t))
    });
    if let Some(ty) = local_ty {
        // Methods (`base.name(…)`) or properties (`base.name`) with what
        // each is.
        let members = |table: &[(&str, &str)], kind: CompletionItemKind| {
            let call = if kind == CompletionItemKind::METHOD {
                "(…)"
            } else {
                ""
            };
            table
                .iter()
                .map(|(name, doc)| CompletionItem {
                    label: name.to_string(),
                    kind: Some(kind),
                    detail: Some(format!("{base}.{name}{call}")),
                    documentation: Some(markdown(doc.to_string())),
                    ..CompletionItem::default()
                })
                .collect()
        };
        return match ty {
            Ty::Tensor(_) | Ty::Unknown => members(&TENSOR_PROPERTIES, CompletionItemKind::PROPERTY),
            // A cooperative group's methods.
            Ty::Namespace(ns) => builtins::members(ns).map(builtin_item).collect(),
            ty => members(builtins::methods_of(ty), CompletionItemKind::METHOD),
        };
    }
    if let Some(module) = analysis::module_of_text(db, file, base) {
        let functions = analysis::functions(db, module)
            .into_iter()
            .map(|f| function_item(db, f));
        let constants = q::item_tree(db, module)
            .globals
            .iter()
            .map(|g| simple(g, CompletionItemKind::CONSTANT, format!("{base}.{g} (module level)")));
        return functions.chain(constants).collect();
    }
    match analysis::resolve_global(db, file, base) {
        Some(Symbol::Namespace(ns)) => builtins::members(ns).map(builtin_item).collect(),
        _ => Vec::new(),
    }
}

/// Every name that can be typed here: the function's parameters, locals and
/// dims, the file's functions, imports and globals, the builtins, dtypes
/// and keywords. A name shadows the later ones it equals.
fn names(db: &dyn Db, file: SourceFile, func: Option<Function<'_>>) -> Vec<CompletionItem> {
    let mut items: Vec<CompletionItem> = Vec::new();
    let mut push = |item: CompletionItem| {
        if !items.iter().any(|i| i.label == item.label) {
            items.push(item);
        }
    };
    if let Some(func) = func {
        for p in &func.signature(db).params {
            push(simple(
                &p.name,
                CompletionItemKind::VARIABLE,
                format!("{}: {}", p.name, p.ty),
            ));
        }
        for (name, _, ty) in &func.body(db).locals {
            push(simple(name, CompletionItemKind::VARIABLE, format!("{name}: {ty}")));
        }
        for dim in func.dim_names() {
            push(simple(dim, CompletionItemKind::TYPE_PARAMETER, format!("{dim}: dim")));
        }
    }
    for f in analysis::functions(db, file) {
        push(function_item(db, f));
    }
    let tree = q::item_tree(db, file);
    for import in &tree.imports {
        let detail = match &import.member {
            Some(m) => format!("from {} import {m}", import.module),
            None => format!("import {}", import.module),
        };
        let kind = if import.member.is_some() {
            CompletionItemKind::FUNCTION
        } else {
            CompletionItemKind::MODULE
        };
        push(simple(&import.binding, kind, detail));
    }
    for global in &tree.globals {
        push(simple(
            global,
            CompletionItemKind::VARIABLE,
            format!("{global} (module level)"),
        ));
    }
    for b in builtins::globals() {
        push(builtin_item(b));
    }
    for ns in builtins::NAMESPACES {
        push(simple(ns, CompletionItemKind::MODULE, format!("namespace {ns}")));
    }
    for (policy, storage, compute, accumulate) in builtins::PRESET_POLICIES {
        push(simple(
            policy,
            CompletionItemKind::CONSTANT,
            format!("policy: {storage} storage, {compute} compute, {accumulate} accumulate"),
        ));
    }
    for d in ALL_DTYPES {
        push(simple(
            d.name(),
            CompletionItemKind::STRUCT,
            format!("dtype {}", d.name()),
        ));
    }
    for k in KEYWORDS {
        push(simple(k, CompletionItemKind::KEYWORD, "keyword".to_string()));
    }
    items
}

fn simple(label: &str, kind: CompletionItemKind, detail: String) -> CompletionItem {
    CompletionItem {
        label: label.to_string(),
        kind: Some(kind),
        detail: Some(detail),
        ..CompletionItem::default()
    }
}

fn function_item(db: &dyn Db, f: Function<'_>) -> CompletionItem {
    simple(f.name(), CompletionItemKind::FUNCTION, signature_label(db, f))
}

fn builtin_item(b: &Builtin) -> CompletionItem {
    let kind = match b.shape {
        Shape::Policy if b.params.is_empty() => CompletionItemKind::CONSTANT,
        _ => CompletionItemKind::FUNCTION,
    };
    CompletionItem {
        label: b.name().to_string(),
        kind: Some(kind),
        detail: Some(builtin_label(b)),
        documentation: Some(markdown(b.doc.to_string())),
        ..CompletionItem::default()
    }
}

fn markdown(value: String) -> Documentation {
    Documentation::MarkupContent(MarkupContent {
        kind: MarkupKind::Markdown,
        value,
    })
}

/// How far back signature help looks for the open parenthesis of a call.
const CALL_SCAN_BYTES: usize = 4096;

pub fn signature_help(snapshot: &Snapshot, uri: &Uri, pos: Position) -> Option<SignatureHelp> {
    let file = snapshot.file_of(uri)?;
    let db = snapshot.db();
    let source = snapshot.source(file);
    let text = snapshot.text(file);
    let offset = convert::offset(&snapshot.line_index(file), pos) as usize;
    let call = open_call(text, offset)?;
    let (label, params, doc) = callee_signature(db, source, &call.callee)?;
    let active = call
        .keyword
        .as_deref()
        .and_then(|k| params.iter().position(|p| parameter_name(p) == k))
        .unwrap_or_else(|| {
            let variadic = params.iter().position(|p| p.starts_with('*'));
            match variadic {
                Some(v) if call.commas >= v => v,
                _ => call.commas,
            }
        });
    let mut parameters = Vec::new();
    let mut from = 0;
    for p in &params {
        let Some(at) = label[from..].find(p.as_str()).map(|i| i + from) else {
            break;
        };
        let start = utf16_len(&label[..at]);
        parameters.push(ParameterInformation {
            label: ParameterLabel::LabelOffsets([start, start + utf16_len(p)]),
            documentation: None,
        });
        from = at + p.len();
    }
    Some(SignatureHelp {
        signatures: vec![SignatureInformation {
            label,
            documentation: doc.map(markdown),
            parameters: Some(parameters),
            active_parameter: Some(active as u32),
        }],
        active_signature: Some(0),
        active_parameter: Some(active as u32),
    })
}

/// The call whose argument list the cursor is in.
struct OpenCall {
    /// `op.matmul`, `helper`, `k` (launch brackets skipped).
    callee: String,
    /// Commas before the cursor at the call's own nesting level.
    commas: usize,
    /// The keyword of the argument being typed (`axis` in `axis=`).
    keyword: Option<String>,
}

fn open_call(text: &str, offset: usize) -> Option<OpenCall> {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    // Strings and comments are blanked, from the start of the top-level
    // chunk (which no string spans), so their brackets and commas do not count.
    let chunk = tessera_syntax::chunk_ranges(text)
        .into_iter()
        .rev()
        .find(|r| r.start <= end)
        .map_or(0, |r| r.start);
    let code = blank_strings_and_comments(&text[chunk..end]);
    let mut floor = code.len().saturating_sub(CALL_SCAN_BYTES);
    while !code.is_char_boundary(floor) {
        floor += 1;
    }
    let window = &code[floor..];
    let mut depth = 0usize;
    let mut commas = 0;
    let mut last_comma = window.len();
    let mut paren = None;
    for (i, c) in window.char_indices().rev() {
        match c {
            ')' | ']' | '}' => depth += 1,
            '[' | '{' if depth > 0 => depth -= 1,
            '(' if depth > 0 => depth -= 1,
            '(' => {
                paren = Some(i);
                break;
            }
            '[' | '{' => return None,
            ',' if depth == 0 => {
                commas += 1;
                if last_comma == window.len() {
                    last_comma = i;
                }
            }
            _ => {}
        }
    }
    let paren = paren?;
    let current = &window[(if commas > 0 { last_comma + 1 } else { paren + 1 })..];
    let keyword = current.trim_start().split_once('=').and_then(|(name, rest)| {
        let name = name.trim();
        let is_name = !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_');
        (is_name && !rest.starts_with('=')).then(|| name.to_string())
    });
    let mut before = window[..paren].trim_end();
    if before.ends_with(']') {
        before = skip_brackets(before)?;
    }
    let mut start = before.len();
    while let Some(c) = before[..start].chars().next_back() {
        if !(c.is_alphanumeric() || c == '_' || c == '.') {
            break;
        }
        start -= c.len_utf8();
    }
    let callee = before[start..].trim_matches('.').to_string();
    (!callee.is_empty()).then_some(OpenCall {
        callee,
        commas,
        keyword,
    })
}

/// The text before a trailing `[...]` group (launch brackets, a dtype).
/// `text` with the characters of string literals (quotes included) and
/// comments replaced by spaces, byte for byte.
fn blank_strings_and_comments(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let mut i = 0;
    while i < bytes.len() {
        let from = i;
        match bytes[i] {
            b'#' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            quote @ (b'"' | b'\'') => {
                let triple = bytes[i..].starts_with(&[quote; 3]);
                i += if triple { 3 } else { 1 };
                while i < bytes.len() {
                    match bytes[i] {
                        b'\\' => i += 2,
                        b'\n' if !triple => break,
                        b if b == quote && !triple => {
                            i += 1;
                            break;
                        }
                        b if b == quote && bytes[i..].starts_with(&[quote; 3]) => {
                            i += 3;
                            break;
                        }
                        _ => i += 1,
                    }
                }
                i = i.min(bytes.len());
            }
            _ => {
                i += 1;
                continue;
            }
        }
        out[from..i].fill(b' ');
    }
    String::from_utf8(out).expect("only whole characters are blanked")
}

fn skip_brackets(text: &str) -> Option<&str> {
    let mut depth = 0usize;
    for (i, c) in text.char_indices().rev() {
        match c {
            ']' => depth += 1,
            '[' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(text[..i].trim_end());
                }
            }
            _ => {}
        }
    }
    None
}

/// A callee's label, its parameters as they appear in the label, and its documentation.
fn callee_signature(db: &dyn Db, file: SourceFile, callee: &str) -> Option<(String, Vec<String>, Option<String>)> {
    let symbol = match callee.rsplit_once('.') {
        Some((base, member)) => match analysis::module_of_text(db, file, base) {
            Some(module) => Function::new(db, module, member).map(Symbol::Function),
            None => match analysis::resolve_global(db, file, base)? {
                Symbol::Namespace(ns) => builtins::lookup(&format!("{ns}.{member}")).map(Symbol::Builtin),
                _ => None,
            },
        },
        None => analysis::resolve_global(db, file, callee),
    }?;
    match symbol {
        Symbol::Builtin(b) => Some((builtin_label(b), builtin_params(b.params), Some(b.doc.to_string()))),
        Symbol::Function(f) => {
            let params = parameter_labels(db, f);
            let label = format!("def {}({}){}", f.name(), params.join(", "), return_label(db, f));
            let rules: Vec<String> = f
                .signature(db)
                .constraints
                .iter()
                .map(|c| format!("`{}`", c.text))
                .collect();
            let doc = (!rules.is_empty()).then(|| format!("where {}", rules.join(", ")));
            Some((label, params, doc))
        }
        _ => None,
    }
}

/// The parameters of an op-table signature such as
/// `[dtype](*dims, swizzle = None)`: those of the call's parentheses.
fn builtin_params(params: &str) -> Vec<String> {
    let Some(open) = params.find('(') else {
        return Vec::new();
    };
    let inner = params[open + 1..]
        .trim_end()
        .strip_suffix(')')
        .unwrap_or(&params[open + 1..]);
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in inner.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(inner[start..i].trim().to_string());
                start = i + 1;
            }
            _ => {}
        }
    }
    let last = inner[start..].trim();
    if !last.is_empty() {
        out.push(last.to_string());
    }
    out
}

/// `axis` for `axis = -1`, `dims` for `*dims`, `x` for `mut x: f32[N]`.
fn parameter_name(label: &str) -> &str {
    let name = label.trim_start_matches('*');
    let end = name.find([':', ' ', '=']).unwrap_or(name.len());
    &name[..end]
}

fn utf16_len(text: &str) -> u32 {
    text.encode_utf16().count() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_open_call_is_found_through_nested_brackets() {
        let text = "y = op.matmul(a[0:2], f(b), acc";
        let call = open_call(text, text.len()).expect("inside a call");
        assert_eq!(call.callee, "op.matmul");
        assert_eq!(call.commas, 2);
        assert_eq!(call.keyword, None);

        let text = "k[grid=(4,), block=(256,)](x, axis=";
        let call = open_call(text, text.len()).expect("inside a launch");
        assert_eq!(call.callee, "k");
        assert_eq!(call.commas, 1);
        assert_eq!(call.keyword.as_deref(), Some("axis"));

        assert!(open_call("x = [1, 2", 9).is_none());
        assert!(open_call("f(a) + 1", 8).is_none());
    }

    #[test]
    fn brackets_and_commas_in_strings_and_comments_do_not_count() {
        let text = "y = f(\"a, (b\", 'c]', # d, (\n  \"\"\"e,\n)\"\"\", é, ";
        let call = open_call(text, text.len()).expect("inside a call");
        assert_eq!(call.callee, "f");
        assert_eq!(call.commas, 4);
        let text = "y = f(\"x\")  # g(a,";
        assert!(open_call(text, text.len()).is_none());
    }

    #[test]
    fn op_table_parameters_split_at_top_level_commas() {
        assert_eq!(
            builtin_params("[dtype](*dims, swizzle = None, bank_pad = 0)"),
            ["*dims", "swizzle = None", "bank_pad = 0"]
        );
        assert_eq!(builtin_params("()"), Vec::<String>::new());
        assert_eq!(builtin_params(""), Vec::<String>::new());
        assert_eq!(parameter_name("*dims"), "dims");
        assert_eq!(parameter_name("axis = -1"), "axis");
        assert_eq!(parameter_name("out: mut f32[N]"), "out");
    }
}
