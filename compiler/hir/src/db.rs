//! The salsa database: inputs and the tracked queries, in dependency order
//! `chunks(file)` → `parse_chunk(chunk)` → `item_tree(file)` →
//! `fn_ast(fn)` → `signature(fn)` → `infer(fn)` → `check_file(file)`.
//!
//! Positions: a file is parsed in top-level chunks interned by their text,
//! so an edit re-parses only the chunk it touches; `fn_ast` rebases a
//! function's spans to its own start, so an edit elsewhere in the file
//! leaves it equal and salsa reuses everything computed from it.
//! Diagnostics of per-function queries carry those relative spans;
//! `check_file` shifts them back by `fn_offset`.

use std::collections::HashMap;
use std::sync::Arc;

use tessera_base::{FileId, Span};
use tessera_diagnostics::Diagnostic;
use tessera_syntax::ast::{FnDef, Stmt, StmtKind};
use tessera_syntax::Parse;

use crate::infer::BodyInfo;
use crate::signature::Signature;

/// Compilation options: the target decides which memory spaces and
/// features exist.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Options {
    pub target: Target,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Target {
    Sm80,
    #[default]
    Sm90a,
    Gfx90a,
    Gfx942,
    Cpu,
}

impl Target {
    pub fn name(self) -> &'static str {
        match self {
            Target::Sm80 => "sm_80",
            Target::Sm90a => "sm_90a",
            Target::Gfx90a => "gfx90a",
            Target::Gfx942 => "gfx942",
            Target::Cpu => "cpu",
        }
    }

    /// Tensor memory exists from sm_100 on; none of the current targets has it.
    pub fn has_tmem(self) -> bool {
        false
    }

    /// Shared memory (LDS) per block, in bytes.
    pub fn max_shared_bytes(self) -> u64 {
        match self {
            Target::Sm80 => 163 << 10,
            Target::Sm90a => 227 << 10,
            Target::Gfx90a | Target::Gfx942 => 64 << 10,
            Target::Cpu => 1 << 30,
        }
    }
}

#[salsa::input(debug)]
pub struct SourceFile {
    #[returns(copy)]
    pub id: FileId,
    /// The path as shown to users; sibling imports resolve against it.
    #[returns(ref)]
    pub path: String,
    #[returns(ref)]
    pub text: String,
}

/// The set of files the compiler knows, and the options.
#[salsa::input(debug)]
pub struct Workspace {
    #[returns(ref)]
    pub files: Vec<SourceFile>,
    #[returns(ref)]
    pub options: Options,
}

#[salsa::db]
pub trait Db: salsa::Database {
    fn workspace(&self) -> Workspace;
}

/// A function, named by its file and its name (the first definition wins;
/// later ones are reported as duplicates).
#[salsa::interned(debug)]
pub struct FnId<'db> {
    #[returns(copy)]
    pub file: SourceFile,
    #[returns(ref)]
    pub name: String,
}

/// A top-level chunk of a file's text (see `tessera_syntax::chunk_ranges`),
/// interned by its text: an edit creates a new chunk for the text it
/// touches, and every other chunk keeps its identity and its parse.
#[salsa::interned(debug)]
pub struct Chunk<'db> {
    #[returns(ref)]
    pub text: String,
}

/// A chunk and where it starts in its file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, salsa::SalsaValue)]
pub struct FileChunk<'db> {
    pub offset: u32,
    pub chunk: Chunk<'db>,
}

/// The chunks of a file, in order; they cover its whole text.
#[salsa::tracked(returns(ref))]
pub fn chunks<'db>(db: &'db dyn Db, file: SourceFile) -> Vec<FileChunk<'db>> {
    let text = file.text(db);
    tessera_syntax::chunk_ranges(text)
        .into_iter()
        .map(|range| FileChunk {
            offset: range.start as u32,
            chunk: Chunk::new(db, text[range].to_string()),
        })
        .collect()
}

/// The parse of one chunk, with spans relative to its start.
#[salsa::tracked(returns(ref))]
pub fn parse_chunk<'db>(db: &'db dyn Db, chunk: Chunk<'db>) -> Parse {
    tessera_syntax::parse(FileId(RELATIVE_BASE), chunk.text(db))
}

/// The lexical and syntax errors of a file. The chunks find an error
/// exactly when the whole file has one (tested in tessera-syntax), and a
/// file with errors is parsed whole for them, so that they are the same
/// as the whole-file parse reports even where error recovery reaches
/// across a chunk boundary.
#[salsa::tracked(returns(ref))]
pub fn syntax_errors(db: &dyn Db, file: SourceFile) -> Vec<Diagnostic> {
    if chunks(db, file)
        .iter()
        .all(|c| parse_chunk(db, c.chunk).diagnostics.is_empty())
    {
        return Vec::new();
    }
    tessera_syntax::parse(file.id(db), file.text(db)).diagnostics
}

/// The top-level statements of a file, each with the offset its spans are
/// relative to.
pub fn top_level<'db>(db: &'db dyn Db, file: SourceFile) -> impl Iterator<Item = (u32, &'db Stmt)> + 'db {
    chunks(db, file).iter().flat_map(move |c| {
        parse_chunk(db, c.chunk)
            .module
            .body
            .iter()
            .map(move |stmt| (c.offset, stmt))
    })
}

/// What a file defines and imports, without positions: it changes only when
/// a function is added, removed or renamed, or an import changes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct ItemTree {
    pub functions: Vec<String>,
    /// `import a.b as c` → ("a.b", Some("c")); `from a import b as c` →
    /// ("a", Some("b"), Some("c")) flattened as (module, name, alias).
    pub imports: Vec<Import>,
    /// Names bound by top-level statements (`P = numerics.policy(...)`).
    pub globals: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Import {
    pub module: String,
    /// The imported member, for `from module import member`.
    pub member: Option<String>,
    /// The name it is bound to in this file.
    pub binding: String,
}

impl Import {
    /// The dotted paths of the modules the import may name: its module,
    /// and for `from pkg import m` the module `pkg.m` too.
    pub fn module_paths(&self) -> impl Iterator<Item = String> + '_ {
        std::iter::once(self.module.clone()).chain(self.member.as_ref().map(|m| format!("{}.{m}", self.module)))
    }
}

#[salsa::tracked(returns(ref))]
pub fn item_tree(db: &dyn Db, file: SourceFile) -> ItemTree {
    let mut tree = ItemTree::default();
    for (_, stmt) in top_level(db, file) {
        match &stmt.kind {
            StmtKind::Def(def) if !tree.functions.contains(&def.name.name) => {
                tree.functions.push(def.name.name.clone())
            }
            StmtKind::Import(paths) => {
                for p in paths {
                    let module: Vec<&str> = p.path.segments.iter().map(|s| s.name.as_str()).collect();
                    let binding = p.alias.as_ref().map_or(module[0].to_string(), |a| a.name.clone());
                    tree.imports.push(Import {
                        module: module.join("."),
                        member: None,
                        binding,
                    });
                }
            }
            StmtKind::FromImport { module, names } => {
                let module: Vec<&str> = module.segments.iter().map(|s| s.name.as_str()).collect();
                for n in names {
                    tree.imports.push(Import {
                        module: module.join("."),
                        member: Some(n.name.name.clone()),
                        binding: n.alias.as_ref().unwrap_or(&n.name).name.clone(),
                    });
                }
            }
            StmtKind::Assign { targets, .. } => {
                for t in targets {
                    if let tessera_syntax::ast::ExprKind::Name(n) = &t.kind {
                        tree.globals.push(n.clone());
                    }
                }
            }
            StmtKind::AnnAssign { target, .. } => {
                if let tessera_syntax::ast::ExprKind::Name(n) = &target.kind {
                    tree.globals.push(n.clone());
                }
            }
            _ => {}
        }
    }
    tree
}

/// Where each function of a file is defined: its chunk's index in
/// `chunks(file)` and its statement's index in the chunk. The first
/// definition of a name wins.
#[salsa::tracked(returns(ref))]
fn fn_index(db: &dyn Db, file: SourceFile) -> HashMap<String, (usize, usize)> {
    let mut index = HashMap::new();
    for (c, chunk) in chunks(db, file).iter().enumerate() {
        for (s, stmt) in parse_chunk(db, chunk.chunk).module.body.iter().enumerate() {
            if let StmtKind::Def(def) = &stmt.kind {
                index.entry(def.name.name.clone()).or_insert((c, s));
            }
        }
    }
    index
}

/// The chunk that defines a function and the statement's index in it —
/// without positions, so that it stays the same when other chunks change.
#[salsa::tracked(returns(copy))]
fn fn_location<'db>(db: &'db dyn Db, func: FnId<'db>) -> Option<(Chunk<'db>, usize)> {
    let file = func.file(db);
    let &(c, s) = fn_index(db, file).get(func.name(db))?;
    Some((chunks(db, file)[c].chunk, s))
}

fn fn_stmt<'db>(db: &'db dyn Db, chunk: Chunk<'db>, stmt: usize) -> Option<(&'db FnDef, u32)> {
    let stmt = parse_chunk(db, chunk).module.body.get(stmt)?;
    match &stmt.kind {
        StmtKind::Def(def) => Some((def, stmt.span.start)),
        _ => None,
    }
}

/// The definition of a function with spans relative to its start.
#[salsa::tracked(returns(ref))]
pub fn fn_ast<'db>(db: &'db dyn Db, func: FnId<'db>) -> Option<Arc<FnDef>> {
    let (chunk, stmt) = fn_location(db, func)?;
    let (def, start) = fn_stmt(db, chunk, stmt)?;
    let mut def = def.clone();
    if start != 0 {
        tessera_syntax::ast::map_spans(&mut def, &mut |span| {
            *span = Span::new(span.start.saturating_sub(start), span.end.saturating_sub(start));
        });
    }
    Some(Arc::new(def))
}

/// Where a function starts in its file (the start of its first decorator).
#[salsa::tracked]
pub fn fn_offset<'db>(db: &'db dyn Db, func: FnId<'db>) -> u32 {
    let file = func.file(db);
    let Some(&(c, s)) = fn_index(db, file).get(func.name(db)) else {
        return 0;
    };
    let chunk = chunks(db, file)[c];
    fn_stmt(db, chunk.chunk, s).map_or(0, |(_, start)| chunk.offset + start)
}

#[salsa::tracked(returns(ref))]
pub fn signature<'db>(db: &'db dyn Db, func: FnId<'db>) -> Signature {
    match fn_ast(db, func) {
        Some(def) => crate::signature::lower(db, func.file(db), def),
        None => Signature::missing(func.name(db)),
    }
}

#[salsa::tracked(returns(ref))]
pub fn infer<'db>(db: &'db dyn Db, func: FnId<'db>) -> BodyInfo {
    match fn_ast(db, func) {
        Some(def) => crate::infer::infer(db, func, def),
        None => BodyInfo::default(),
    }
}

/// Finds a file of the workspace by path.
pub fn file_by_path(db: &dyn Db, path: &str) -> Option<SourceFile> {
    db.workspace().files(db).iter().copied().find(|f| f.path(db) == path)
}

/// Every diagnostic of a file, in source order.
#[salsa::tracked(returns(ref))]
pub fn check_file(db: &dyn Db, file: SourceFile) -> Vec<Diagnostic> {
    let mut diags = syntax_errors(db, file).clone();
    diags.extend(crate::module::check_module(db, file));
    for name in &item_tree(db, file).functions {
        let func = FnId::new(db, file, name.clone());
        let anchors = [Anchor {
            file,
            name: name.clone(),
        }];
        for diag in &signature(db, func).diagnostics {
            diags.push(absolute(db, diag, &anchors));
        }
        let body = infer(db, func);
        for diag in &body.diagnostics {
            diags.push(absolute(db, diag, &body.anchors));
        }
    }
    diags.extend(crate::effect_check::check_effects(db, file));
    diags.extend(crate::device::check_device(db, file));
    diags.extend(crate::assigned::check(db, file));
    diags.sort_by_key(|d| d.primary_span().map(|s| (s.span.start, s.span.end)));
    diags.dedup();
    diags
}

/// Per-function queries report spans relative to the start of a function:
/// `FileId(RELATIVE_BASE + k)` means "relative to anchor `k`", and anchor 0
/// is the function being checked. This keeps their results independent of
/// where the functions are in the file.
pub const RELATIVE_BASE: u32 = 0xFFFF_0000;

/// A function that relative spans are measured from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Anchor {
    pub file: SourceFile,
    pub name: String,
}

/// A span relative to anchor `k`.
pub fn relative(span: Span, anchor: u32) -> tessera_base::FileSpan {
    span.in_file(FileId(RELATIVE_BASE + anchor))
}

/// Resolves relative spans of a per-function diagnostic to file positions.
pub fn absolute(db: &dyn Db, diag: &Diagnostic, anchors: &[Anchor]) -> Diagnostic {
    let mut diag = diag.clone();
    let resolve = |fs: &mut tessera_base::FileSpan| {
        let Some(k) = fs.file.0.checked_sub(RELATIVE_BASE) else {
            return;
        };
        let Some(anchor) = anchors.get(k as usize) else { return };
        let offset = fn_offset(db, FnId::new(db, anchor.file, anchor.name.clone()));
        fs.file = anchor.file.id(db);
        fs.span = Span::new(fs.span.start + offset, fs.span.end + offset);
    };
    for label in &mut diag.labels {
        resolve(&mut label.span);
    }
    for fix in &mut diag.fixes {
        for edit in &mut fix.edits {
            resolve(&mut edit.span);
        }
    }
    diag
}
