//! The values of host code, and tensors that live on a device.

use std::cell::{Ref, RefCell, RefMut};
use std::fmt;
use std::rc::Rc;

use tessera_base::range_len;

use crate::device::Buffer;
use crate::{DType, Device, RunError, Tensor};

/// A value of host code.
#[derive(Clone, Debug)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Rc<str>),
    Tuple(Rc<Vec<Value>>),
    /// A list: a mutable sequence that prints in brackets. As in Python,
    /// every name bound to it and every list or dict holding it sees its
    /// changes (`b = a; b.append(1)` changes `a`).
    List(Rc<RefCell<Vec<Value>>>),
    /// A dict: its entries in insertion order, keys distinct; shared as a
    /// list is.
    Dict(Rc<RefCell<Entries>>),
    Tensor(TensorValue),
    /// `range(start, stop, step)`.
    Range(i64, i64, i64),
    /// A dtype used as a value (`dtype=f16`).
    DType(DType),
    /// A function of the program: the unit of its file (an index into the
    /// program's units) and its name.
    Function(usize, Rc<str>),
    /// A module the program imports (`helpers` of `import helpers`), or
    /// the package part of a dotted one (`pkg` of `import pkg.mod`): the
    /// unit whose import names it and its dotted path.
    Module(usize, Rc<str>),
    /// A builtin, by its path (`op.sum`).
    Builtin(&'static str),
    /// A builtin namespace (`op`).
    Namespace(&'static str),
    /// A method of a string, a list or a dict with its receiver
    /// (`", ".join`, `xs.append`, `d.items`), to be called.
    Method(Rc<Value>, &'static str),
}

/// A dict's (key, value) entries.
pub type Entries = Vec<(Value, Value)>;

impl Value {
    pub fn tuple(items: Vec<Value>) -> Value {
        Value::Tuple(Rc::new(items))
    }

    pub fn list(items: Vec<Value>) -> Value {
        Value::List(Rc::new(RefCell::new(items)))
    }

    pub fn dict(entries: Entries) -> Value {
        Value::Dict(Rc::new(RefCell::new(entries)))
    }

    /// The items of a tuple or a list (a list's as they are now).
    pub fn items(&self) -> Option<Vec<Value>> {
        match self {
            Value::Tuple(items) => Some(items.to_vec()),
            Value::List(items) => Some(items.borrow().clone()),
            _ => None,
        }
    }

    /// A copy of this value whose lists and dicts, at any depth, are new
    /// ones with the same contents (a module constant's, handed to host
    /// code, which does not change module constants).
    pub fn deep_copy(&self) -> Value {
        match self {
            Value::List(items) => Value::list(items.borrow().iter().map(Value::deep_copy).collect()),
            Value::Dict(entries) => Value::dict(
                entries
                    .borrow()
                    .iter()
                    .map(|(k, v)| (k.deep_copy(), v.deep_copy()))
                    .collect(),
            ),
            Value::Tuple(items) => Value::tuple(items.iter().map(Value::deep_copy).collect()),
            other => other.clone(),
        }
    }

    /// A sequence of the same kind as this tuple, list or string, of
    /// `items` (a string's are its characters, strings of one).
    pub fn same_kind(&self, items: Vec<Value>) -> Value {
        match self {
            Value::List(_) => Value::list(items),
            Value::Str(_) => Value::str(
                &items
                    .iter()
                    .filter_map(|v| match v {
                        Value::Str(c) => Some(&**c),
                        _ => None,
                    })
                    .collect::<String>(),
            ),
            _ => Value::tuple(items),
        }
    }

    /// A tensor element as a Python number.
    pub fn from_elem(e: crate::tensor::Elem) -> Value {
        match e {
            crate::tensor::Elem::Int(i) => Value::Int(i),
            crate::tensor::Elem::Float(f) => Value::Float(f),
            crate::tensor::Elem::Bool(b) => Value::Bool(b),
        }
    }

    pub fn str(s: &str) -> Value {
        Value::Str(Rc::from(s))
    }

    /// What the value is, for messages: `an int`, `a f32 tensor of shape (4,)`.
    pub fn describe(&self) -> String {
        match self {
            Value::None => "None".into(),
            Value::Bool(_) => "a bool".into(),
            Value::Int(_) => "an int".into(),
            Value::Float(_) => "a float".into(),
            Value::Str(_) => "a string".into(),
            Value::Tuple(_) => "a tuple".into(),
            Value::List(_) => "a list".into(),
            Value::Dict(_) => "a dict".into(),
            Value::Tensor(t) => format!(
                "{} tensor of shape {}",
                tessera_base::with_article(&t.dtype().to_string()),
                crate::tensor::shape_text(&t.shape())
            ),
            Value::Range(..) => "a range".into(),
            Value::DType(d) => format!("the dtype {d}"),
            Value::Function(_, f) => format!("the function `{f}`"),
            Value::Module(_, m) => format!("the module `{m}`"),
            Value::Builtin(b) => format!("the builtin `{b}`"),
            Value::Namespace(n) => format!("the namespace `{n}`"),
            Value::Method(_, m) => format!("the method `{m}`"),
        }
    }

    /// Python's truthiness.
    pub fn truthy(&self) -> Option<bool> {
        Some(match self {
            Value::None => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::Tuple(t) => !t.is_empty(),
            Value::List(t) => !t.borrow().is_empty(),
            Value::Dict(d) => !d.borrow().is_empty(),
            Value::Range(a, b, s) => range_len(*a, *b, *s) > 0,
            Value::Tensor(t) if t.numel() == 1 => t.element(0).ok()?.as_bool(),
            Value::Tensor(_) => return None,
            Value::DType(_)
            | Value::Function(..)
            | Value::Module(..)
            | Value::Builtin(_)
            | Value::Namespace(_)
            | Value::Method(..) => true,
        })
    }
}

/// Which copy of a tensor holds its current value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fresh {
    Host,
    Device,
    Both,
}

struct Stored {
    host: Tensor,
    device: Option<Buffer>,
    fresh: Fresh,
}

/// A tensor of host code. Values share it (`b = a` aliases, as in Python);
/// on a GPU it keeps a device copy, and copies between the two happen when
/// one side needs what the other changed: before a kernel reads it, after a
/// kernel may have written it and the host reads it.
#[derive(Clone)]
pub struct TensorValue(Rc<Shared>);

/// The dtype and shape never change; the storage does.
struct Shared {
    dtype: DType,
    shape: Vec<usize>,
    numel: usize,
    cell: RefCell<Stored>,
}

impl fmt::Debug for TensorValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TensorValue({} {:?})", self.0.dtype, self.0.shape)
    }
}

impl TensorValue {
    /// A tensor whose value is on the host.
    pub fn new(tensor: Tensor) -> TensorValue {
        TensorValue(Rc::new(Shared {
            dtype: tensor.dtype(),
            shape: tensor.shape().to_vec(),
            numel: tensor.numel(),
            cell: RefCell::new(Stored {
                host: tensor,
                device: None,
                fresh: Fresh::Host,
            }),
        }))
    }

    /// A tensor whose value is in `buffer` on `device` (an executor's result).
    pub fn on_device(device: &Device, buffer: Buffer, dtype: DType, shape: &[usize]) -> Result<TensorValue, RunError> {
        let host = Tensor::zeros(dtype, shape)?;
        if buffer.len() != host.bytes().len() {
            return Err(RunError::launch(format!(
                "a device buffer of {} bytes cannot hold a {dtype} tensor of shape {}",
                buffer.len(),
                crate::tensor::shape_text(shape)
            )));
        }
        let value = TensorValue::new(host);
        {
            let mut s = value.borrow_mut()?;
            if device.is_host() {
                let bytes = buffer.host_bytes().unwrap_or(&[]);
                s.host.bytes_mut().copy_from_slice(bytes);
            } else {
                s.device = Some(buffer);
                s.fresh = Fresh::Device;
            }
        }
        Ok(value)
    }

    pub fn dtype(&self) -> DType {
        self.0.dtype
    }

    pub fn shape(&self) -> Vec<usize> {
        self.0.shape.clone()
    }

    pub fn numel(&self) -> usize {
        self.0.numel
    }

    /// Whether two values are the same tensor.
    pub fn same(&self, other: &TensorValue) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }

    fn borrow_mut(&self) -> Result<RefMut<'_, Stored>, RunError> {
        self.0
            .cell
            .try_borrow_mut()
            .map_err(|_| RunError::launch("a tensor is written while it is being read"))
    }

    fn borrow(&self) -> Result<Ref<'_, Stored>, RunError> {
        self.0
            .cell
            .try_borrow()
            .map_err(|_| RunError::launch("a tensor is read while it is being written"))
    }

    fn sync_to_host(&self, device: &Device) -> Result<(), RunError> {
        if self.borrow()?.fresh != Fresh::Device {
            return Ok(());
        }
        let mut s = self.borrow_mut()?;
        if s.fresh == Fresh::Device {
            let Stored {
                host, device: buffer, ..
            } = &mut *s;
            if let Some(buffer) = buffer {
                device.download(buffer, host.bytes_mut())?;
            }
            s.fresh = Fresh::Both;
        }
        Ok(())
    }

    /// The current value on the host (copied back from the device if a
    /// kernel may have changed it).
    pub fn host(&self, device: &Device) -> Result<Ref<'_, Tensor>, RunError> {
        self.sync_to_host(device)?;
        Ok(Ref::map(self.borrow()?, |s| &s.host))
    }

    /// The host copy, to change; the device copy becomes stale.
    pub fn host_mut(&self, device: &Device) -> Result<RefMut<'_, Tensor>, RunError> {
        self.sync_to_host(device)?;
        let mut s = self.borrow_mut()?;
        s.fresh = Fresh::Host;
        Ok(RefMut::map(s, |s| &mut s.host))
    }

    /// Element `i` of a tensor that is on the host (no copy is made).
    pub(crate) fn element(&self, i: usize) -> Result<crate::tensor::Elem, RunError> {
        let s = self.borrow()?;
        if s.fresh == Fresh::Device {
            return Err(RunError::launch("the tensor's value is on the device"));
        }
        Ok(s.host.get(i))
    }

    /// The address a kernel on `device` uses for this tensor: on the CPU the
    /// host data itself; on a GPU the device copy, uploaded first if the
    /// host changed it. The kernel may write it, so afterwards the device
    /// copy is the current one.
    pub fn kernel_address(&self, device: &Device) -> Result<u64, RunError> {
        let mut s = self.borrow_mut()?;
        if device.is_host() {
            return Ok(s.host.as_mut_ptr() as u64);
        }
        let Stored {
            host,
            device: buffer,
            fresh,
        } = &mut *s;
        if buffer.is_none() {
            *buffer = Some(device.alloc(host.bytes().len())?);
            *fresh = Fresh::Host;
        }
        let buffer = buffer.as_mut().ok_or_else(|| RunError::launch("no device buffer"))?;
        if *fresh == Fresh::Host {
            device.upload(buffer, host.bytes())?;
        }
        *fresh = Fresh::Device;
        Ok(buffer.address())
    }
}
