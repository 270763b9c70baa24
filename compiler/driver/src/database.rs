//! The compiler database: the salsa storage behind the CLI (and, with its
//! own inputs, the language server).

use tessera_base::FileId;
use tessera_diagnostics::Diagnostic;
use tessera_hir::{Options, SourceFile, Workspace};

use std::path::Path;

use crate::{Input, Sources, Stage};

#[salsa::db]
#[derive(Clone)]
pub struct Database {
    storage: salsa::Storage<Self>,
    /// Set right after construction (an input needs a database to exist).
    workspace: Option<Workspace>,
    files: Vec<SourceFile>,
    /// Problems found while loading (invalid UTF-8), by file.
    load_diagnostics: Vec<Vec<Diagnostic>>,
    /// Files deleted from disk since they were loaded (the language server's
    /// modules): they keep their ids but are not in the workspace, so no
    /// import finds them.
    gone: Vec<FileId>,
}

impl Default for Database {
    fn default() -> Database {
        Database::with_events(None)
    }
}

impl Database {
    /// A database that reports salsa's events (used by tests that prove
    /// what re-executes after an edit).
    pub fn with_events(events: Option<Box<dyn Fn(salsa::Event) + Send + Sync + 'static>>) -> Database {
        let storage = salsa::Storage::new(events);
        let mut db = Database {
            storage,
            workspace: None,
            files: Vec::new(),
            load_diagnostics: Vec::new(),
            gone: Vec::new(),
        };
        db.workspace = Some(Workspace::new(&db, Vec::new(), Options::default()));
        db
    }

    /// Makes the database hold `sources` (replacing what it held).
    pub fn load(&mut self, sources: &Sources) {
        self.files = sources
            .ids()
            .map(|id| {
                let source = sources.get(id);
                SourceFile::new(self, id, source.display.clone(), source.text.clone())
            })
            .collect();
        self.load_diagnostics = sources
            .ids()
            .map(|id| sources.get(id).load_diagnostics.clone())
            .collect();
        self.gone.clear();
        self.set_workspace_files();
    }

    /// The workspace's files: every file loaded but the ones gone from disk.
    fn set_workspace_files(&mut self) {
        use salsa::Setter;
        let files: Vec<SourceFile> = self
            .files
            .iter()
            .enumerate()
            .filter(|&(i, _)| !self.gone.contains(&FileId(i as u32)))
            .map(|(_, &f)| f)
            .collect();
        tessera_hir::Db::workspace(self).set_files(self).to(files);
    }

    /// Takes a file out of the workspace (it was deleted from disk: imports
    /// of it are unresolved again) or puts it back.
    pub fn set_on_disk(&mut self, file: FileId, on_disk: bool) {
        let was_gone = self.gone.contains(&file);
        if on_disk == was_gone {
            self.gone.retain(|&g| g != file);
            if !on_disk {
                self.gone.push(file);
            }
            self.set_workspace_files();
        }
    }

    pub fn set_options(&mut self, options: Options) {
        use salsa::Setter;
        tessera_hir::Db::workspace(self).set_options(self).to(options);
    }

    /// Loads the sibling modules that the loaded files import (`import
    /// helpers` → `helpers.tsr` beside the importer), transitively, into
    /// `sources` and the database. Imports are read from the files' cached
    /// item trees; a module that cannot be read is left out, and its import
    /// is reported as unresolved.
    pub fn load_imports(&mut self, sources: &mut Sources) {
        let mut next = 0;
        while next < self.files.len() {
            let id = FileId(next as u32);
            next += 1;
            let Input::Path(path) = &sources.get(id).input else {
                continue;
            };
            let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
            let imports = tessera_hir::db::item_tree(self, self.source(id)).imports.clone();
            for import in imports {
                if import.module == "tessera" || import.module.starts_with("tessera.") {
                    continue;
                }
                // `from pkg import m` imports the module `pkg/m.tsr` when
                // `m` is one (it had been found only after `import pkg.m`).
                let candidates = import
                    .module_paths()
                    .map(|p| dir.join(format!("{}.tsr", p.replace('.', "/"))));
                for candidate in candidates {
                    if crate::files::is_loaded(sources, &candidate) || !candidate.is_file() {
                        continue;
                    }
                    if let Some(loaded) = crate::files::load_imported(sources, &candidate) {
                        let source = sources.get(loaded);
                        self.add_file(&source.display, &source.text);
                        self.load_diagnostics[loaded.0 as usize] = source.load_diagnostics.clone();
                    }
                }
            }
        }
    }

    /// Adds one file (used by tests and benchmarks that build sources in memory).
    pub fn add_file(&mut self, path: &str, text: &str) -> FileId {
        let id = FileId(self.files.len() as u32);
        let file = SourceFile::new(self, id, path.to_string(), text.to_string());
        self.files.push(file);
        self.load_diagnostics.push(Vec::new());
        self.set_workspace_files();
        id
    }

    /// Replaces the text of a file (an edit).
    pub fn set_text(&mut self, file: FileId, text: &str) {
        use salsa::Setter;
        let source = self.files[file.0 as usize];
        source.set_text(self).to(text.to_string());
    }

    pub fn source(&self, file: FileId) -> SourceFile {
        self.files[file.0 as usize]
    }

    /// The path and id of every file the database holds, the imported
    /// modules' included.
    pub fn paths(&self) -> Vec<(String, FileId)> {
        self.files.iter().map(|f| (f.path(self).clone(), f.id(self))).collect()
    }

    /// Every diagnostic of `file`, in source order.
    pub fn check(&self, file: FileId) -> Vec<Diagnostic> {
        self.check_to(file, Stage::Full)
    }

    /// `file` and the sibling modules it imports, transitively, each once
    /// and `file` first.
    pub fn program_files(&self, file: FileId) -> Vec<FileId> {
        let mut order = vec![file];
        let mut next = 0;
        while next < order.len() {
            let source = self.source(order[next]);
            next += 1;
            for import in &tessera_hir::db::item_tree(self, source).imports {
                // `from pkg import m` reaches the module `pkg.m`.
                for path in import.module_paths() {
                    let Some(module) = tessera_hir::resolve_module(self, source, &path) else {
                        continue;
                    };
                    let id = module.id(self);
                    if !order.contains(&id) {
                        order.push(id);
                    }
                }
            }
        }
        order
    }

    /// The diagnostics of `file` and of the modules it imports: what must
    /// check clean before `file` is lowered, since the lowering inlines
    /// what it imports.
    pub fn check_program(&self, file: FileId) -> Vec<Diagnostic> {
        self.program_files(file)
            .into_iter()
            .flat_map(|f| self.check(f))
            .collect()
    }

    /// The diagnostics of `file` up to `stage`, in source order.
    pub fn check_to(&self, file: FileId, stage: Stage) -> Vec<Diagnostic> {
        let loaded = &self.load_diagnostics[file.0 as usize];
        if !loaded.is_empty() {
            return loaded.clone();
        }
        let source = self.source(file);
        match stage {
            Stage::Syntax => tessera_hir::db::syntax_errors(self, source).clone(),
            Stage::Full => tessera_hir::check_file(self, source).clone(),
        }
    }
}

#[salsa::db]
impl salsa::Database for Database {}

#[salsa::db]
impl tessera_hir::Db for Database {
    fn workspace(&self) -> Workspace {
        self.workspace.expect("created with the database")
    }
}
