//! The print buffer of a launch (`tessera_codegen::print`): allocated with
//! its header before the launch, read back and formatted after it, every
//! thread's lines in block and thread order, each thread's in the order it
//! printed them.

use tessera_codegen::print::{PrintSite, BUFFER_BYTES, CAPACITY_WORDS, HEADER_WORDS, RECORD_HEADER_WORDS};
use tessera_codegen::KernelInfo;
use tessera_ir_tile::{print_pieces, PrintPiece};
use tessera_runtime::device::Buffer;
use tessera_runtime::host::print::float_repr;
use tessera_runtime::{DType, Device, RunError};

/// A print buffer for a launch of a kernel that prints, its header zero.
pub(crate) fn buffer(device: &Device) -> Result<Buffer, RunError> {
    let mut b = device.alloc(BUFFER_BYTES)?;
    device.memset(&mut b, 0)?;
    Ok(b)
}

/// What a launch of `info` printed into `buffer`: its lines, and a last one
/// saying how many did not fit.
pub(crate) fn read(device: &Device, info: &KernelInfo, buffer: &Buffer) -> Result<String, RunError> {
    let mut bytes = vec![0u8; buffer.len()];
    device.download(buffer, &mut bytes)?;
    let words: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("chunks of 8 bytes")))
        .collect();
    format(info, &words)
}

/// Formats the records of `words`, a print buffer of a launch of `info`.
pub(crate) fn format(info: &KernelInfo, words: &[u64]) -> Result<String, RunError> {
    let corrupt = |what: &str| RunError::launch(format!("the print buffer of `{}` is corrupt: {what}", info.name));
    if words.len() < HEADER_WORDS {
        return Err(corrupt("it has no header"));
    }
    let (claimed, dropped) = (words[0], words[1]);
    let records = &words[HEADER_WORDS..];
    let end = claimed.min(CAPACITY_WORDS as u64).min(records.len() as u64) as usize;
    let mut lines: Vec<(u64, u64, String)> = Vec::new();
    let mut at = 0;
    // A record that did not fit left the rest of the buffer as it was:
    // zero, where a record starts with its print's number plus one.
    while at < end && records[at] != 0 {
        let site = usize::try_from(records[at] - 1)
            .ok()
            .and_then(|s| info.prints.get(s))
            .ok_or_else(|| corrupt(&format!("a record names print {}", records[at] - 1)))?;
        let n = site.record_words();
        let Some(record) = records.get(at..at + n).filter(|_| at + n <= end) else {
            break;
        };
        lines.push((record[1], record[2], line(site, &record[RECORD_HEADER_WORDS..])));
        at += n;
    }
    lines.sort_by_key(|&(block, thread, _)| (block, thread));
    let mut out = String::new();
    for (_, _, text) in lines {
        out.push_str(&text);
        out.push('\n');
    }
    if dropped > 0 {
        let lines = if dropped == 1 { "line" } else { "lines" };
        out.push_str(&format!(
            "[{dropped} more {lines} printed by `{}` dropped: a launch's print buffer holds {BUFFER_BYTES} bytes]\n",
            info.name,
        ));
    }
    Ok(out)
}

/// One record's line: `site.text` with its values in the placeholders.
fn line(site: &PrintSite, values: &[u64]) -> String {
    // The verifier checked the text before the kernel was built.
    let pieces = print_pieces(&site.text).unwrap_or_default();
    let mut values = site.values.iter().zip(values);
    let mut out = String::new();
    for piece in pieces {
        match piece {
            PrintPiece::Char(ch) => out.push(ch),
            PrintPiece::Value => {
                if let Some((ty, &bits)) = values.next() {
                    out.push_str(&value(ty, bits));
                }
            }
        }
    }
    out
}

/// A value of IR scalar type `ty` from its record word, as host code
/// prints a scalar: `True`/`False`, integers in decimal, floats as Python
/// does with the shortest digits that read back as the value in `ty`.
fn value(ty: &str, bits: u64) -> String {
    match ty {
        "i1" => if bits != 0 { "True" } else { "False" }.to_string(),
        "u8" | "u16" | "u32" | "u64" => bits.to_string(),
        "i8" | "i16" | "i32" | "i64" | "index" => (bits as i64).to_string(),
        _ => {
            let dtype = crate::executor::host_dtype(ty).unwrap_or(DType::F64);
            float_repr(f64::from_bits(bits), dtype)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(prints: Vec<PrintSite>) -> KernelInfo {
        KernelInfo {
            name: "k".into(),
            prints,
            ..KernelInfo::default()
        }
    }

    fn site(text: &str, values: &[&str]) -> PrintSite {
        PrintSite {
            text: text.into(),
            values: values.iter().map(|v| v.to_string()).collect(),
        }
    }

    #[test]
    fn records_print_in_block_and_thread_order() {
        let info = info(vec![site("t {} x {}", &["i32", "f32"]), site("{{done}}", &[])]);
        let x = f64::from(0.1f32).to_bits();
        let records = [
            vec![1, 1, 0, 7, x],
            vec![2, 0, 5],
            vec![1, 0, 5, (-3i64) as u64, (-0.5f64).to_bits()],
            vec![2, 1, 0],
        ]
        .concat();
        let mut words = vec![records.len() as u64, 0, 0, 0];
        words.extend(&records);
        assert_eq!(
            format(&info, &words).unwrap(),
            "{done}\nt -3 x -0.5\nt 7 x 0.1\n{done}\n"
        );
    }

    #[test]
    fn a_full_buffer_keeps_what_fit_and_counts_the_rest() {
        let info = info(vec![site("{} {}", &["i1", "u32"])]);
        // Two records fit; the third claimed the words past the end.
        let claimed = CAPACITY_WORDS as u64 + 3;
        let mut words = vec![claimed, 1, 0, 0];
        words.extend([1, 0, 1, 1, 4_000_000_000, 1, 0, 0, 0, 9]);
        words.resize(BUFFER_BYTES / 8, 0);
        assert_eq!(
            format(&info, &words).unwrap(),
            format!(
                "False 9\nTrue 4000000000\n[1 more line printed by `k` dropped: a launch's print buffer holds {BUFFER_BYTES} bytes]\n"
            )
        );
    }

    #[test]
    fn a_record_of_no_print_is_an_error() {
        let words = vec![3, 0, 0, 0, 5, 0, 0];
        let e = format(&info(vec![]), &words).unwrap_err();
        assert!(e.message.contains("corrupt"), "{}", e.message);
    }
}
