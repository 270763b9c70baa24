use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use tessera_base::{FileId, LineIndex, Span};
use tessera_diagnostics::{Code, Diagnostic, SourceLookup};

/// The largest source file the compiler reads. Spans are 32-bit offsets;
/// this keeps well inside them and bounds memory use.
pub const MAX_SOURCE_BYTES: u64 = 256 << 20;

/// Where a source comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    Path(PathBuf),
    Stdin,
}

pub struct SourceFile {
    /// The path as shown to the user (`<stdin>` for standard input).
    pub display: String,
    pub input: Input,
    pub text: String,
    pub line_index: LineIndex,
    /// Problems found while reading, such as invalid UTF-8.
    pub load_diagnostics: Vec<Diagnostic>,
    /// Named on the command line (rather than loaded because one imports it).
    pub requested: bool,
}

/// The loaded files, indexed by [`FileId`].
#[derive(Default)]
pub struct Sources {
    files: Vec<SourceFile>,
}

impl Sources {
    pub fn add(&mut self, display: String, input: Input, text: String) -> FileId {
        let line_index = LineIndex::new(&text);
        self.files.push(SourceFile {
            display,
            input,
            text,
            line_index,
            load_diagnostics: Vec::new(),
            requested: true,
        });
        FileId(self.files.len() as u32 - 1)
    }

    /// The files named by the user, in order.
    pub fn requested(&self) -> impl Iterator<Item = FileId> + '_ {
        self.ids().filter(|&id| self.get(id).requested)
    }

    pub fn get(&self, file: FileId) -> &SourceFile {
        &self.files[file.0 as usize]
    }

    pub fn ids(&self) -> impl Iterator<Item = FileId> {
        (0..self.files.len() as u32).map(FileId)
    }

    /// Replaces a file's text, keeping its id (after fixes are applied).
    pub fn set_text(&mut self, file: FileId, text: String) {
        let source = &mut self.files[file.0 as usize];
        source.line_index = LineIndex::new(&text);
        source.text = text;
        source.load_diagnostics.clear();
    }
}

impl SourceLookup for Sources {
    fn path(&self, file: FileId) -> &str {
        &self.get(file).display
    }

    fn text(&self, file: FileId) -> &str {
        &self.get(file).text
    }

    fn line_index(&self, file: FileId) -> &LineIndex {
        &self.get(file).line_index
    }
}

/// Why the inputs could not be loaded (exit code 2, no diagnostics).
#[derive(Debug)]
pub enum LoadError {
    Io { path: String, error: std::io::Error },
    NoSources { dir: String },
    TooLarge { path: String, bytes: u64 },
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Io { path, error } => {
                write!(f, "cannot read `{path}`: {}", describe_io(error))
            }
            LoadError::NoSources { dir } => write!(f, "no `.tsr` files found in directory `{dir}`"),
            LoadError::TooLarge { path, bytes } => write!(
                f,
                "`{path}` is too large: {:.1} MiB (the limit is {} MiB)",
                *bytes as f64 / (1 << 20) as f64,
                MAX_SOURCE_BYTES >> 20
            ),
        }
    }
}

fn describe_io(error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => error.to_string(),
    }
}

/// Loads the given paths: files as they are, directories by every `.tsr`
/// file below them (sorted), `-` as standard input.
pub fn load(args: &[String]) -> Result<Sources, LoadError> {
    let mut sources = Sources::default();
    for arg in args {
        if arg == "-" {
            let mut bytes = Vec::new();
            std::io::stdin()
                .take(MAX_SOURCE_BYTES + 1)
                .read_to_end(&mut bytes)
                .map_err(|error| LoadError::Io {
                    path: "<stdin>".into(),
                    error,
                })?;
            add_bytes(&mut sources, "<stdin>".into(), Input::Stdin, bytes)?;
            continue;
        }
        let path = Path::new(arg);
        let meta = std::fs::metadata(path).map_err(|error| LoadError::Io {
            path: arg.clone(),
            error,
        })?;
        if meta.is_dir() {
            let mut found = Vec::new();
            collect_tsr(path, &mut found).map_err(|error| LoadError::Io {
                path: arg.clone(),
                error,
            })?;
            if found.is_empty() {
                return Err(LoadError::NoSources { dir: arg.clone() });
            }
            found.sort();
            for file in found {
                load_file(&mut sources, &file)?;
            }
        } else {
            load_file(&mut sources, path)?;
        }
    }
    Ok(sources)
}

/// The path as shown and as imports resolve against it: `./a/b.tsr` and
/// `a/./b.tsr` are both `a/b.tsr`.
fn display_path(path: &Path) -> String {
    let parts: Vec<String> = path
        .components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let joined = parts.join("/");
    if path.is_absolute() && !joined.starts_with('/') {
        format!("/{}", joined.trim_start_matches('/'))
    } else {
        joined.replace("//", "/")
    }
}

/// Loads `path` as a module that a loaded file imports (not named by the
/// user). `None` when it cannot be read: the import is then unresolved.
pub(crate) fn load_imported(sources: &mut Sources, path: &Path) -> Option<FileId> {
    load_file(sources, path).ok()?;
    let last = sources.files.last_mut()?;
    last.requested = false;
    Some(FileId(sources.files.len() as u32 - 1))
}

/// Whether a file with this path (as `display_path` writes it) is loaded.
pub(crate) fn is_loaded(sources: &Sources, path: &Path) -> bool {
    let display = display_path(path);
    sources.files.iter().any(|f| f.display == display)
}

fn collect_tsr(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let kind = entry.file_type()?;
        if kind.is_dir() {
            collect_tsr(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "tsr") {
            out.push(path);
        }
    }
    Ok(())
}

fn load_file(sources: &mut Sources, path: &Path) -> Result<(), LoadError> {
    let display = display_path(path);
    let io = |error| LoadError::Io {
        path: display.clone(),
        error,
    };
    let bytes_on_disk = std::fs::metadata(path).map_err(io)?.len();
    if bytes_on_disk > MAX_SOURCE_BYTES {
        return Err(LoadError::TooLarge {
            path: display,
            bytes: bytes_on_disk,
        });
    }
    let bytes = std::fs::read(path).map_err(io)?;
    add_bytes(sources, display.clone(), Input::Path(path.to_path_buf()), bytes)
}

fn add_bytes(sources: &mut Sources, display: String, input: Input, bytes: Vec<u8>) -> Result<(), LoadError> {
    if bytes.len() as u64 > MAX_SOURCE_BYTES {
        return Err(LoadError::TooLarge {
            path: display,
            bytes: bytes.len() as u64,
        });
    }
    match String::from_utf8(bytes) {
        Ok(text) => {
            sources.add(display, input, text);
        }
        Err(error) => {
            let valid = error.utf8_error().valid_up_to();
            let bad_byte = error.as_bytes()[valid];
            // Keep the valid prefix so the report can show where it breaks.
            let text = String::from_utf8_lossy(&error.as_bytes()[..valid]).into_owned();
            let file = sources.add(display, input, text);
            let at = Span::empty(valid as u32).in_file(file);
            let diag = Diagnostic::error(Code::E0005, "source file is not valid UTF-8")
                .with_primary(at, format!("byte 0x{bad_byte:02x} here is not UTF-8"))
                .with_help("save the file as UTF-8");
            sources.files[file.0 as usize].load_diagnostics.push(diag);
        }
    }
    Ok(())
}
