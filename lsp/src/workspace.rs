//! The documents and the database, owned by one writer thread.
//!
//! Every notification that changes what the server knows (open, change,
//! close, files changed on disk) becomes a [`Command`], sent in arrival
//! order and applied in that order by the writer, which alone holds the
//! master [`Database`]. Requests get a [`Snapshot`] through the same queue,
//! so each one sees exactly the edits that arrived before it. Once the queue
//! is empty, the writer hands a snapshot to the diagnostics thread, which
//! checks the open documents and publishes what changed.
//!
//! A snapshot is a clone of the database: when the writer applies the next
//! edit, salsa cancels every query running on an older snapshot (it unwinds
//! with `salsa::Cancelled`) and waits for those snapshots to be dropped, so
//! a request or a diagnostics run on stale text stops instead of finishing.

use std::collections::{HashMap, HashSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};

use tessera_base::{FileId, LineIndex};
use tessera_driver::{Database, Input, Sources};
use tower_lsp_server::ls_types::{self as lsp, TextDocumentContentChangeEvent, Uri};

use crate::convert;

/// A change to what the server knows, or a request for a snapshot.
pub enum Command {
    Open {
        uri: Uri,
        text: String,
        version: i32,
    },
    Change {
        uri: Uri,
        version: i32,
        changes: Vec<TextDocumentContentChangeEvent>,
    },
    Close {
        uri: Uri,
    },
    /// Files changed on disk (`workspace/didChangeWatchedFiles`).
    FilesChanged {
        uris: Vec<Uri>,
    },
    Snapshot(tokio::sync::oneshot::Sender<Snapshot>),
}

/// Where the writer and the diagnostics thread send what they produce.
pub trait Output: Send + Sync + 'static {
    fn publish(&self, uri: Uri, diagnostics: Vec<lsp::Diagnostic>, version: Option<i32>);
    fn log(&self, message: String);
}

/// An open document: the editor's text, its version and its line index.
pub struct Doc {
    pub file: FileId,
    pub version: i32,
    pub text: String,
    pub line_index: Arc<LineIndex>,
}

/// A read-only view of the database and the documents at one point of the
/// edit sequence. Cheap to make; queries on it are cancelled by the next edit.
#[derive(Clone)]
pub struct Snapshot {
    db: Database,
    docs: Arc<HashMap<Uri, Arc<Doc>>>,
    /// The URI of every file of the database, by `FileId`.
    uris: Arc<Vec<Option<Uri>>>,
    /// The line indexes made for files that are not open, each made once
    /// per snapshot (its texts never change).
    indexes: Arc<Mutex<HashMap<FileId, Arc<LineIndex>>>>,
}

impl Snapshot {
    pub fn database(&self) -> &Database {
        &self.db
    }

    pub fn db(&self) -> &dyn tessera_hir::Db {
        &self.db
    }

    pub fn docs(&self) -> impl Iterator<Item = (&Uri, &Doc)> {
        self.docs.iter().map(|(u, d)| (u, &**d))
    }

    pub fn uri(&self, file: FileId) -> Option<&Uri> {
        self.uris.get(file.0 as usize)?.as_ref()
    }

    /// The file of the database with this URI, open or read from disk.
    pub fn file_of(&self, uri: &Uri) -> Option<FileId> {
        if let Some(doc) = self.docs.get(uri) {
            return Some(doc.file);
        }
        let index = self.uris.iter().position(|u| u.as_ref() == Some(uri))?;
        Some(FileId(index as u32))
    }

    pub fn source(&self, file: FileId) -> tessera_hir::SourceFile {
        self.db.source(file)
    }

    pub fn text(&self, file: FileId) -> &str {
        self.db.source(file).text(&self.db)
    }

    /// The line index of a file: an open document's own, else one made
    /// from the text the database holds, once per snapshot, so that
    /// converting every reference or label in an imported module does not
    /// index its whole text again each time.
    pub fn line_index(&self, file: FileId) -> Arc<LineIndex> {
        if let Some(doc) = self.docs.values().find(|d| d.file == file) {
            return doc.line_index.clone();
        }
        // A panic cannot leave the map half-written: take it even if poisoned.
        let mut indexes = self.indexes.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        indexes
            .entry(file)
            .or_insert_with(|| Arc::new(LineIndex::new(self.text(file))))
            .clone()
    }

    /// A cancellation token for the queries running on this snapshot.
    pub fn cancellation_token(&self) -> salsa::CancellationToken {
        salsa::Database::cancellation_token(&self.db)
    }
}

/// The sending end of the writer's queue.
#[derive(Clone)]
pub struct Writer {
    commands: mpsc::Sender<Command>,
}

impl Writer {
    /// Starts the writer and the diagnostics thread. Both stop when every
    /// `Writer` handle is dropped.
    pub fn start(output: Arc<dyn Output>) -> std::io::Result<Writer> {
        let (commands, queue) = mpsc::channel();
        let (jobs, job_queue) = mpsc::channel();
        let diagnostics_output = output.clone();
        spawn("tessera-lsp diagnostics", move || {
            diagnostics_loop(job_queue, &*diagnostics_output)
        })?;
        spawn("tessera-lsp writer", move || writer_loop(queue, jobs, &*output))?;
        Ok(Writer { commands })
    }

    pub fn send(&self, command: Command) {
        // The writer only stops when every handle is gone, so this cannot fail
        // while `self` exists; a failure would mean it is shutting down.
        let _ = self.commands.send(command);
    }

    /// A snapshot taken after every command sent before this call.
    pub fn snapshot(&self) -> tokio::sync::oneshot::Receiver<Snapshot> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.send(Command::Snapshot(tx));
        rx
    }
}

/// The threads that run compiler queries get the stack the CLI gives its
/// compiler thread: recursion over the tree is bounded by the parser's
/// nesting limits, and this leaves ample room for every pass.
pub const QUERY_STACK_BYTES: usize = 256 << 20;

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name(name.to_string())
        .stack_size(QUERY_STACK_BYTES)
        .spawn(f)
        .map(drop)
}

/// What the diagnostics thread is asked to do: check the open documents of
/// `snapshot`, publish for `changed` whatever the result, for the others
/// only when it differs from what was last published, and clear `closed`.
struct Job {
    snapshot: Snapshot,
    changed: HashSet<Uri>,
    closed: Vec<Uri>,
}

fn writer_loop(queue: mpsc::Receiver<Command>, jobs: mpsc::Sender<Job>, output: &dyn Output) {
    let mut state = State::default();
    let mut changed = HashSet::new();
    let mut closed = Vec::new();
    while let Ok(first) = queue.recv() {
        let mut next = Some(first);
        // Apply everything queued before checking: a burst of keystrokes
        // costs one diagnostics run.
        while let Some(command) = next.take() {
            let applied = catch_unwind(AssertUnwindSafe(|| state.apply(command, &mut changed, &mut closed)));
            if let Err(panic) = applied {
                output.log(format!(
                    "internal error while applying an edit: {}",
                    panic_message(&panic)
                ));
            }
            next = queue.try_recv().ok();
        }
        if changed.is_empty() && closed.is_empty() && !state.reloaded {
            continue;
        }
        state.reloaded = false;
        let job = Job {
            snapshot: state.snapshot(),
            changed: std::mem::take(&mut changed),
            closed: std::mem::take(&mut closed),
        };
        // Fails only when the diagnostics thread is gone; the job (and its
        // snapshot) is dropped with the error.
        let _ = jobs.send(job);
    }
}

/// The writer's state: the master database and the sources it was loaded
/// from (kept in step, file for file, so the driver can load the modules
/// that files import), the open documents and each file's URI.
#[derive(Default)]
struct State {
    db: Database,
    sources: Sources,
    docs: Arc<HashMap<Uri, Arc<Doc>>>,
    uris: Arc<Vec<Option<Uri>>>,
    /// A file that is not open was re-read from disk since the last job.
    reloaded: bool,
}

impl State {
    fn snapshot(&self) -> Snapshot {
        Snapshot {
            db: self.db.clone(),
            docs: self.docs.clone(),
            uris: self.uris.clone(),
            indexes: Arc::default(),
        }
    }

    fn apply(&mut self, command: Command, changed: &mut HashSet<Uri>, closed: &mut Vec<Uri>) {
        match command {
            Command::Open { uri, text, version } => {
                let file = self.register(&uri, &text);
                let doc = Doc {
                    file,
                    version,
                    line_index: Arc::new(LineIndex::new(&text)),
                    text,
                };
                Arc::make_mut(&mut self.docs).insert(uri.clone(), Arc::new(doc));
                self.load_imports();
                closed.retain(|c| c != &uri);
                changed.insert(uri);
            }
            Command::Change { uri, version, changes } => {
                let Some(doc) = self.docs.get(&uri) else { return };
                let text = apply_changes(&doc.text, &doc.line_index, changes);
                let file = doc.file;
                self.set_text(file, &text);
                let doc = Doc {
                    file,
                    version,
                    line_index: Arc::new(LineIndex::new(&text)),
                    text,
                };
                Arc::make_mut(&mut self.docs).insert(uri.clone(), Arc::new(doc));
                self.load_imports();
                changed.insert(uri);
            }
            Command::Close { uri } => {
                let Some(doc) = Arc::make_mut(&mut self.docs).remove(&uri) else {
                    return;
                };
                // The file stays in the database (other files may import it),
                // now with its text on disk; one not on disk (never saved,
                // or deleted while open) is no module to import from then
                // on (it had stayed one, empty).
                let text = file_path(&uri).and_then(|p| read_from_disk(&p));
                self.db.set_on_disk(doc.file, text.is_some());
                self.set_text(doc.file, &text.unwrap_or_default());
                changed.remove(&uri);
                closed.push(uri);
            }
            Command::FilesChanged { uris } => {
                for uri in uris {
                    if self.docs.contains_key(&uri) {
                        continue;
                    }
                    let Some(index) = self.uris.iter().position(|u| u.as_ref() == Some(&uri)) else {
                        continue;
                    };
                    let file = FileId(index as u32);
                    let text = file_path(&uri).and_then(|p| read_from_disk(&p));
                    self.db.set_on_disk(file, text.is_some());
                    self.set_text(file, &text.unwrap_or_default());
                    self.reloaded = true;
                }
                // A module created on disk that an open file imports.
                self.reloaded |= self.load_imports();
            }
            Command::Snapshot(reply) => {
                // The requester may have gone (a cancelled request); the
                // snapshot is then dropped here.
                let _ = reply.send(self.snapshot());
            }
        }
    }

    /// The file of a document being opened: the one already loaded from the
    /// same path (because another file imports it), or a new one.
    fn register(&mut self, uri: &Uri, text: &str) -> FileId {
        let (display, input) = match file_path(uri) {
            Some(path) => (path.to_string_lossy().into_owned(), Input::Path(path)),
            None => (uri.as_str().to_string(), Input::Stdin),
        };
        if let Some(file) = self.sources.ids().find(|&id| self.sources.get(id).display == display) {
            // An open document is the truth for its file, on disk or not.
            self.db.set_on_disk(file, true);
            self.set_text(file, text);
            Arc::make_mut(&mut self.uris)[file.0 as usize] = Some(uri.clone());
            return file;
        }
        let file = self.sources.add(display.clone(), input, text.to_string());
        self.db.add_file(&display, text);
        Arc::make_mut(&mut self.uris).push(Some(uri.clone()));
        file
    }

    fn set_text(&mut self, file: FileId, text: &str) {
        self.db.set_text(file, text);
        self.sources.set_text(file, text.to_string());
    }

    /// Loads the modules that the files import and that are not loaded yet,
    /// from disk, through the driver (the CLI's file layer).
    /// Loads the modules the files import that are not loaded yet; whether
    /// there were any.
    fn load_imports(&mut self) -> bool {
        self.db.load_imports(&mut self.sources);
        let known = self.uris.len() as u32;
        let new_files: Vec<Option<Uri>> = self
            .sources
            .ids()
            .filter(|id| id.0 >= known)
            .map(|id| match &self.sources.get(id).input {
                Input::Path(path) => uri_of_path(path),
                Input::Stdin => None,
            })
            .collect();
        if new_files.is_empty() {
            return false;
        }
        Arc::make_mut(&mut self.uris).extend(new_files);
        true
    }
}

/// Applies the content changes of one `didChange`, in order. Positions are
/// UTF-16 and go through the line index of the text they refer to, which
/// clamps them: an edit past the end of a line or of the text lands at its end.
pub fn apply_changes(text: &str, index: &LineIndex, changes: Vec<TextDocumentContentChangeEvent>) -> String {
    let mut text = text.to_string();
    let mut rebuilt: Option<LineIndex> = None;
    for change in changes {
        let Some(range) = change.range else {
            text = change.text;
            rebuilt = Some(LineIndex::new(&text));
            continue;
        };
        let current = rebuilt.as_ref().unwrap_or(index);
        let a = convert::offset(current, range.start) as usize;
        let b = convert::offset(current, range.end) as usize;
        text.replace_range(a.min(b)..a.max(b), &change.text);
        rebuilt = Some(LineIndex::new(&text));
    }
    text
}

/// The path of a `file:` URI, normalized as its text reads: `.` and empty
/// segments dropped, `..` taking the segment before it off (an editor may
/// send `dir/./main.tsr` or `dir//main.tsr`; the document's imports are
/// found beside it either way, as the CLI finds them).
pub fn file_path(uri: &Uri) -> Option<PathBuf> {
    let is_file = uri.scheme().as_str().eq_ignore_ascii_case("file");
    let path = is_file.then(|| uri.to_file_path().map(|p| p.into_owned())).flatten()?;
    let mut normal = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                if !normal.pop() {
                    normal.push(part);
                }
            }
            other => normal.push(other),
        }
    }
    Some(normal)
}

pub fn uri_of_path(path: &Path) -> Option<Uri> {
    Uri::from_file_path(path)
}

/// A file's text on disk, read like the CLI reads it. `None` when it cannot
/// be read; a file that is not UTF-8 yields its valid prefix.
fn read_from_disk(path: &Path) -> Option<String> {
    let sources = tessera_driver::load(&[path.to_string_lossy().into_owned()]).ok()?;
    let file = sources.ids().next()?;
    Some(sources.get(file).text.clone())
}

fn diagnostics_loop(jobs: mpsc::Receiver<Job>, output: &dyn Output) {
    let mut published: HashMap<Uri, Vec<lsp::Diagnostic>> = HashMap::new();
    // Documents whose change was not published yet because their run was
    // cancelled by a newer edit.
    let mut owed: HashSet<Uri> = HashSet::new();
    while let Ok(mut job) = jobs.recv() {
        // Only the newest snapshot is worth checking.
        while let Ok(newer) = jobs.try_recv() {
            owed.extend(job.changed);
            job.closed.extend(newer.closed);
            job = Job {
                closed: job.closed,
                ..newer
            };
        }
        owed.extend(std::mem::take(&mut job.changed));
        for uri in job.closed {
            if published.remove(&uri).is_some() || owed.remove(&uri) {
                output.publish(uri, Vec::new(), None);
            }
        }
        let snapshot = job.snapshot;
        let result = catch_unwind(AssertUnwindSafe(|| check_open_documents(&snapshot)));
        drop(snapshot);
        let results = match result {
            Ok(results) => results,
            Err(panic) => {
                if panic.downcast_ref::<salsa::Cancelled>().is_none() {
                    output.log(format!("internal error while checking: {}", panic_message(&panic)));
                }
                continue;
            }
        };
        // A module no open document imports any more has nothing to show.
        let gone: Vec<Uri> = published
            .keys()
            .filter(|u| !results.iter().any(|(r, ..)| r == *u))
            .cloned()
            .collect();
        for uri in gone {
            published.remove(&uri);
            output.publish(uri, Vec::new(), None);
        }
        for (uri, version, diagnostics) in results {
            let owed_here = owed.remove(&uri);
            if !owed_here && published.get(&uri) == Some(&diagnostics) {
                continue;
            }
            published.insert(uri.clone(), diagnostics.clone());
            output.publish(uri, diagnostics, version);
        }
    }
}

/// The diagnostics of each open document (with its version), and of each
/// module an open document imports that is not open itself (without one):
/// `tessera check` reports a module's errors with the file that imports
/// it, and a module that does not parse had been reported nowhere.
fn check_open_documents(snapshot: &Snapshot) -> Vec<(Uri, Option<i32>, Vec<lsp::Diagnostic>)> {
    let mut docs: Vec<(&Uri, &Doc)> = snapshot.docs().collect();
    docs.sort_by_key(|(_, d)| d.file);
    let mut modules: Vec<FileId> = Vec::new();
    for (_, doc) in &docs {
        for file in snapshot.database().program_files(doc.file) {
            if !modules.contains(&file) && !docs.iter().any(|(_, d)| d.file == file) {
                modules.push(file);
            }
        }
    }
    let check = |file: FileId| -> Vec<lsp::Diagnostic> {
        let index = snapshot.line_index(file);
        let diags = snapshot.database().check(file);
        diags
            .iter()
            .map(|d| convert::diagnostic(snapshot, file, &index, d))
            .collect()
    };
    let open = docs
        .iter()
        .map(|(uri, doc)| ((*uri).clone(), Some(doc.version), check(doc.file)));
    let imported = modules
        .into_iter()
        .filter_map(|file| Some((snapshot.uri(file)?.clone(), None, check(file))));
    open.chain(imported).collect()
}

/// The message of a caught panic.
pub fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else if let Some(c) = panic.downcast_ref::<salsa::Cancelled>() {
        c.to_string()
    } else {
        "a panic without a message".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_is_not_open_is_indexed_once_per_snapshot() {
        let text = "def f(x: f32) -> f32:\r\n    return x # é𝔸\rpass\n";
        let mut db = Database::default();
        let file = db.add_file("m.tsr", text);
        let snapshot = State {
            db,
            sources: Sources::default(),
            docs: Arc::default(),
            uris: Arc::default(),
            reloaded: false,
        }
        .snapshot();
        let first = snapshot.line_index(file);
        assert!(Arc::ptr_eq(&first, &snapshot.line_index(file)));
        assert!(Arc::ptr_eq(&first, &snapshot.clone().line_index(file)));
        assert_eq!(*first, LineIndex::new(text));
    }
}
