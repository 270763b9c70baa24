//! NumPy `.npy` files: format versions 1.0, 2.0 and 3.0, C order. Little-
//! and big-endian data are read (big-endian is swapped); files are written
//! little-endian, version 1.0 when the header fits and 2.0 otherwise.
//! `bf16` has no NumPy dtype: it is written as the 2-byte void `|V2`
//! (what `ml_dtypes`' bfloat16 arrays look like on disk) and `|V2` reads
//! back as `bf16`. The fp8 dtypes are likewise written as `|V1` (as
//! `ml_dtypes`' float8 arrays are), which cannot say which of the two it
//! is: `|V1` reads as `fp8_e4m3`, and an operator's parameter of dtype
//! `fp8_e5m2` takes the bytes as its own ([`crate::host`]). `ml_dtypes`
//! writes its `float8_e5m2` as `<f1`, which reads as `fp8_e5m2`.

use std::path::Path;

use tessera_diagnostics::Code;

use crate::tensor::{element_count, shape_text};
use crate::{DType, RunError, Tensor};

const MAGIC: &[u8; 6] = b"\x93NUMPY";

fn bad(path: &str, message: impl Into<String>) -> RunError {
    RunError::new(
        Code::E1004,
        format!("`{path}` is not a valid .npy file: {}", message.into()),
    )
}

/// Reads a `.npy` file.
pub fn load(path: &Path) -> Result<Tensor, RunError> {
    let shown = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| RunError::new(Code::E1004, format!("cannot read `{shown}`: {e}")))?;
    parse(&shown, &bytes)
}

/// Writes `tensor` as a `.npy` file.
pub fn save(path: &Path, tensor: &Tensor) -> Result<(), RunError> {
    std::fs::write(path, to_bytes(tensor))
        .map_err(|e| RunError::new(Code::E1004, format!("cannot write `{}`: {e}", path.display())))
}

/// The dtype a `descr` names, and whether its data is big-endian.
fn dtype_of(descr: &str) -> Option<(DType, bool)> {
    let (order, code) = descr.split_at_checked(1)?;
    let big = match order {
        "<" | "|" | "=" => false,
        ">" => true,
        _ => return None,
    };
    let dtype = match code {
        "f2" => DType::F16,
        "f4" => DType::F32,
        "f8" => DType::F64,
        "i1" => DType::I8,
        "i2" => DType::I16,
        "i4" => DType::I32,
        "i8" => DType::I64,
        "u1" => DType::U8,
        "u2" => DType::U16,
        "u4" => DType::U32,
        "u8" => DType::U64,
        "b1" => DType::Bool,
        "V2" => DType::Bf16,
        "V1" => DType::Fp8E4m3,
        // `ml_dtypes` 0.6 gives its float8_e5m2 the descr `<f1`.
        "f1" => DType::Fp8E5m2,
        _ => return None,
    };
    Some((dtype, big))
}

/// The `descr` written for a dtype.
pub fn descr(dtype: DType) -> &'static str {
    match dtype {
        DType::F16 => "<f2",
        DType::Bf16 => "|V2",
        DType::Fp8E4m3 | DType::Fp8E5m2 => "|V1",
        DType::F32 => "<f4",
        DType::F64 => "<f8",
        DType::I8 => "|i1",
        DType::I16 => "<i2",
        DType::I32 => "<i4",
        DType::I64 => "<i8",
        DType::U8 => "|u1",
        DType::U16 => "<u2",
        DType::U32 => "<u4",
        DType::U64 => "<u8",
        DType::Bool => "|b1",
    }
}

/// The NumPy (or `ml_dtypes`) type that `astype` converts an array to for
/// a dtype, as a user writes it.
pub fn numpy_name(dtype: DType) -> &'static str {
    match dtype {
        DType::F16 => "np.float16",
        DType::Bf16 => "ml_dtypes.bfloat16",
        DType::Fp8E4m3 => "ml_dtypes.float8_e4m3fn",
        DType::Fp8E5m2 => "ml_dtypes.float8_e5m2",
        DType::F32 => "np.float32",
        DType::F64 => "np.float64",
        DType::I8 => "np.int8",
        DType::I16 => "np.int16",
        DType::I32 => "np.int32",
        DType::I64 => "np.int64",
        DType::U8 => "np.uint8",
        DType::U16 => "np.uint16",
        DType::U32 => "np.uint32",
        DType::U64 => "np.uint64",
        DType::Bool => "np.bool_",
    }
}

/// Parses the bytes of a `.npy` file; `path` names it in errors.
pub fn parse(path: &str, bytes: &[u8]) -> Result<Tensor, RunError> {
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err(bad(path, "it does not start with the magic string `\\x93NUMPY`"));
    }
    let (major, minor) = (bytes[6], bytes[7]);
    let (header_len, start) = match major {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10usize),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        _ => {
            return Err(bad(
                path,
                format!("format version {major}.{minor} is not supported (1.0, 2.0 and 3.0 are)"),
            ))
        }
    };
    let end = start
        .checked_add(header_len)
        .filter(|&e| e <= bytes.len())
        .ok_or_else(|| bad(path, "the header is cut short"))?;
    let header = std::str::from_utf8(&bytes[start..end]).map_err(|_| bad(path, "the header is not text"))?;
    let header = Header::parse(header).map_err(|m| bad(path, m))?;
    if header.fortran_order {
        return Err(RunError::new(
            Code::E1004,
            format!("`{path}` is in Fortran order, which is not supported"),
        )
        .with_help("save the array in C order: `np.save(path, np.ascontiguousarray(a))`"));
    }
    let (dtype, big) = dtype_of(&header.descr).ok_or_else(|| {
        RunError::new(
            Code::E1004,
            format!("`{path}` holds dtype `{}`, which is not supported", header.descr),
        )
        .with_note(
            "supported: f2, f4, f8, i1, i2, i4, i8, u1, u2, u4, u8, b1 (either byte order), V2 (bf16), V1 (fp8) and f1 (fp8_e5m2)",
        )
    })?;
    let count = element_count(&header.shape)?;
    let need = count
        .checked_mul(dtype.size())
        .ok_or_else(|| bad(path, format!("the shape {} is too large", shape_text(&header.shape))))?;
    let data = &bytes[end..];
    if data.len() != need {
        return Err(bad(
            path,
            format!(
                "it holds {} bytes of data, but a {} array of shape {} takes {need}",
                data.len(),
                header.descr,
                shape_text(&header.shape)
            ),
        ));
    }
    let mut tensor = Tensor::from_bytes(dtype, &header.shape, data)?;
    if big && dtype.size() > 1 {
        for chunk in tensor.bytes_mut().chunks_exact_mut(dtype.size()) {
            chunk.reverse();
        }
    }
    Ok(tensor)
}

/// The bytes of a `.npy` file holding `tensor`.
pub fn to_bytes(tensor: &Tensor) -> Vec<u8> {
    let mut dict = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
        descr(tensor.dtype()),
        shape_text(tensor.shape())
    );
    // The whole preamble is padded with spaces to a multiple of 64 bytes,
    // and the header ends with a newline.
    let version = if dict.len() + 11 < 65536 { 1 } else { 2 };
    let preamble = if version == 1 { 10 } else { 12 };
    let total = (preamble + dict.len() + 1).div_ceil(64) * 64;
    while preamble + dict.len() + 1 < total {
        dict.push(' ');
    }
    dict.push('\n');
    let mut out = Vec::with_capacity(total + tensor.bytes().len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[version, 0]);
    if version == 1 {
        out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(dict.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out.extend_from_slice(tensor.bytes());
    out
}

/// The fields of the header's dictionary.
struct Header {
    descr: String,
    fortran_order: bool,
    shape: Vec<usize>,
}

/// A Python literal of the subset headers use.
#[derive(Debug)]
enum Lit {
    Str(String),
    Bool(bool),
    Int(u64),
    Tuple(Vec<Lit>),
    List,
}

impl Header {
    fn parse(text: &str) -> Result<Header, String> {
        let mut p = LitParser {
            s: text.as_bytes(),
            i: 0,
        };
        let entries = p.dict()?;
        p.ws();
        if p.i != p.s.len() {
            return Err("unexpected text after the header's dictionary".into());
        }
        let field = |name: &str| entries.iter().find(|(k, _)| k == name).map(|(_, v)| v);
        let descr = match field("descr") {
            Some(Lit::Str(s)) => s.clone(),
            Some(Lit::List) => return Err("structured dtypes are not supported".into()),
            Some(_) => return Err("`descr` is not a string".into()),
            None => return Err("the header has no `descr`".into()),
        };
        let fortran_order = match field("fortran_order") {
            Some(Lit::Bool(b)) => *b,
            Some(_) => return Err("`fortran_order` is not True or False".into()),
            None => return Err("the header has no `fortran_order`".into()),
        };
        let shape = match field("shape") {
            Some(Lit::Tuple(items)) => items
                .iter()
                .map(|d| match d {
                    Lit::Int(n) => usize::try_from(*n).map_err(|_| "a dim of `shape` is too large".to_string()),
                    _ => Err("`shape` holds something other than integers".to_string()),
                })
                .collect::<Result<Vec<_>, _>>()?,
            Some(_) => return Err("`shape` is not a tuple".into()),
            None => return Err("the header has no `shape`".into()),
        };
        Ok(Header {
            descr,
            fortran_order,
            shape,
        })
    }
}

struct LitParser<'a> {
    s: &'a [u8],
    i: usize,
}

impl LitParser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!("expected `{}` at byte {} of the header", c as char, self.i))
        }
    }

    fn dict(&mut self) -> Result<Vec<(String, Lit)>, String> {
        self.expect(b'{')?;
        let mut entries = Vec::new();
        while !self.eat(b'}') {
            let Lit::Str(key) = self.lit(0)? else {
                return Err("a key of the header's dictionary is not a string".into());
            };
            self.expect(b':')?;
            let value = self.lit(0)?;
            entries.push((key, value));
            if !self.eat(b',') {
                self.expect(b'}')?;
                break;
            }
        }
        Ok(entries)
    }

    fn lit(&mut self, depth: usize) -> Result<Lit, String> {
        if depth > 32 {
            return Err("the header nests too deeply".into());
        }
        self.ws();
        let rest = &self.s[self.i..];
        match rest.first() {
            Some(&q @ (b'\'' | b'"')) => {
                let len = rest[1..]
                    .iter()
                    .position(|&c| c == q)
                    .ok_or("a string in the header is not closed")?;
                let s = String::from_utf8_lossy(&rest[1..1 + len]).into_owned();
                self.i += len + 2;
                Ok(Lit::Str(s))
            }
            Some(b'(' | b'[') => {
                let close = if rest[0] == b'(' { b')' } else { b']' };
                self.i += 1;
                let mut items = Vec::new();
                while !self.eat(close) {
                    items.push(self.lit(depth + 1)?);
                    if !self.eat(b',') {
                        self.expect(close)?;
                        break;
                    }
                }
                Ok(if close == b')' { Lit::Tuple(items) } else { Lit::List })
            }
            Some(c) if c.is_ascii_digit() => {
                let len = rest.iter().take_while(|c| c.is_ascii_digit()).count();
                let text = std::str::from_utf8(&rest[..len]).unwrap_or("");
                self.i += len;
                // NumPy 1.x wrote longs as `3L`.
                if self.s.get(self.i) == Some(&b'L') {
                    self.i += 1;
                }
                text.parse()
                    .map(Lit::Int)
                    .map_err(|_| "an integer in the header is too large".into())
            }
            _ if rest.starts_with(b"True") => {
                self.i += 4;
                Ok(Lit::Bool(true))
            }
            _ if rest.starts_with(b"False") => {
                self.i += 5;
                Ok(Lit::Bool(false))
            }
            _ => Err(format!("unexpected text at byte {} of the header", self.i)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes NumPy writes for `np.save(f, np.arange(6, dtype='<f4').reshape(2, 3))`.
    fn numpy_f32_2x3() -> Vec<u8> {
        let mut b = b"\x93NUMPY\x01\x00\x76\x00".to_vec();
        let mut h = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }".to_string();
        while h.len() < 117 {
            h.push(' ');
        }
        h.push('\n');
        b.extend_from_slice(h.as_bytes());
        for v in 0..6 {
            b.extend_from_slice(&(v as f32).to_le_bytes());
        }
        b
    }

    #[test]
    fn reads_and_writes_what_numpy_writes() {
        let bytes = numpy_f32_2x3();
        assert_eq!(bytes.len(), 128 + 24);
        let t = parse("a.npy", &bytes).unwrap();
        assert_eq!(t.dtype(), DType::F32);
        assert_eq!(t.shape(), &[2, 3]);
        assert_eq!(t.to_f64_vec(), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(to_bytes(&t), bytes, "the same bytes NumPy writes");
    }

    #[test]
    fn round_trips_every_dtype_and_rank() {
        for dtype in crate::dtype::ALL_DTYPES {
            for shape in [vec![], vec![0], vec![5], vec![2, 3, 4]] {
                let mut t = Tensor::zeros(dtype, &shape).unwrap();
                for i in 0..t.numel() {
                    t.set(i, crate::tensor::Elem::Int(i as i64 % 7));
                }
                let bytes = to_bytes(&t);
                let header_end = bytes.iter().position(|&c| c == b'\n').unwrap() + 1;
                assert_eq!(header_end % 64, 0, "the preamble is padded to 64 bytes");
                let back = parse("t.npy", &bytes).unwrap();
                // `|V1` cannot tell the fp8 formats apart: it reads as e4m3.
                let read_as = if dtype == DType::Fp8E5m2 { DType::Fp8E4m3 } else { dtype };
                assert_eq!((back.dtype(), back.shape()), (read_as, &shape[..]));
                assert_eq!(back.bytes(), t.bytes());
            }
        }
    }

    #[test]
    fn reads_version_2_big_endian_and_long_headers() {
        let header = "{'shape': (2L,), 'fortran_order': False, \"descr\": '>i4'}\n";
        let mut b = b"\x93NUMPY\x02\x00".to_vec();
        b.extend_from_slice(&(header.len() as u32).to_le_bytes());
        b.extend_from_slice(header.as_bytes());
        b.extend_from_slice(&7i32.to_be_bytes());
        b.extend_from_slice(&(-3i32).to_be_bytes());
        let t = parse("b.npy", &b).unwrap();
        assert_eq!(t.as_slice::<i32>().unwrap(), &[7, -3]);
        let big = Tensor::zeros(DType::U8, &[1; 25000]).unwrap();
        let bytes = to_bytes(&big);
        assert_eq!(&bytes[6..8], &[2, 0], "a header over 64 KiB needs version 2.0");
        assert_eq!(parse("c.npy", &bytes).unwrap().shape().len(), 25000);
    }

    #[test]
    fn reads_the_e5m2_of_ml_dtypes() {
        // `np.save` of an ml_dtypes float8_e5m2 array: [1.0, -2.0] as `<f1`.
        let header = "{'descr': '<f1', 'fortran_order': False, 'shape': (2,), }";
        let mut b = b"\x93NUMPY\x01\x00".to_vec();
        let padded = format!("{header:<117}\n");
        b.extend_from_slice(&(padded.len() as u16).to_le_bytes());
        b.extend_from_slice(padded.as_bytes());
        b.extend_from_slice(&[0x3c, 0xc0]);
        let t = parse("e5.npy", &b).unwrap();
        assert_eq!(t.dtype(), DType::Fp8E5m2);
        assert_eq!(t.to_f64_vec(), vec![1.0, -2.0]);
    }

    /// `bytes` with the first `from` replaced by `to` (same length).
    fn replace(bytes: &[u8], from: &str, to: &str) -> Vec<u8> {
        assert_eq!(from.len(), to.len());
        let at = bytes.windows(from.len()).position(|w| w == from.as_bytes()).unwrap();
        let mut out = bytes.to_vec();
        out[at..at + to.len()].copy_from_slice(to.as_bytes());
        out
    }

    fn error(bytes: &[u8]) -> String {
        let e = parse("x.npy", bytes).unwrap_err();
        assert_eq!(e.code, Code::E1004);
        e.message
    }

    #[test]
    fn reports_what_is_wrong() {
        let good = numpy_f32_2x3();
        assert!(error(b"PK\x03\x04").contains("magic string"));
        let mut v9 = good.clone();
        v9[6] = 9;
        assert!(error(&v9).contains("format version 9.0"));
        let fortran = replace(&good, "False", "True ");
        assert!(error(&fortran).contains("Fortran order"));
        let complex = replace(&good, "<f4", "<c8");
        assert!(error(&complex).contains("dtype `<c8`"));
        assert!(
            error(&good[..good.len() - 4]).contains("holds 20 bytes of data, but a <f4 array of shape (2, 3) takes 24")
        );
        let broken = replace(&good, "(2, 3)", "(2, 3 ");
        assert!(error(&broken).contains("unexpected text at byte"));
        let mut short = good[..20].to_vec();
        short[8] = 0xff;
        assert!(error(&short).contains("cut short"));
        let header = "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }\n";
        let mut structured = b"\x93NUMPY\x01\x00".to_vec();
        structured.extend_from_slice(&(header.len() as u16).to_le_bytes());
        structured.extend_from_slice(header.as_bytes());
        structured.extend_from_slice(&[0; 4]);
        assert!(error(&structured).contains("structured"));
    }
}
