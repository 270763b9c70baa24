//! The registry of diagnostic codes. A code, once published, keeps its
//! meaning; `spec/diagnostics.md` lists every code here (a test checks it).

use std::fmt;

#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Code(&'static str);

impl Code {
    pub fn as_str(self) -> &'static str {
        self.0
    }

    /// The registry entry of a code such as `"E0030"`.
    pub fn lookup(code: &str) -> Option<&'static CodeInfo> {
        CODES
            .iter()
            .find(|info| info.code.0.eq_ignore_ascii_case(code))
    }

    pub fn info(self) -> &'static CodeInfo {
        Code::lookup(self.0).expect("every Code constant is registered")
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl fmt::Debug for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// What a code means: a one-line title and a long explanation with an
/// example, printed by `tessera check --explain CODE`.
pub struct CodeInfo {
    pub code: Code,
    pub title: &'static str,
    pub explanation: &'static str,
}

macro_rules! codes {
    ($($name:ident: $title:literal => $explanation:literal,)*) => {
        impl Code {
            $(pub const $name: Code = Code(stringify!($name));)*
        }

        /// Every code, in numeric order.
        pub static CODES: &[CodeInfo] = &[
            $(CodeInfo { code: Code::$name, title: $title, explanation: $explanation },)*
        ];
    };
}

codes! {
    E0001: "unexpected character" =>
"A character appeared that cannot start any token, such as `$` or `?`, or a
backslash that is not the last character of a line.

```tessera
x = 3 $ 4    # error: `$` is not an operator
```

Remove the character. A backslash continues a line only when it is the
last character before the line break.",

    E0002: "unterminated string literal" =>
"A string literal was opened but not closed before the end of its line (or,
for a triple-quoted string, before the end of the file).

```tessera
msg = \"unfinished
```

Close the string with the quote that opened it.",

    E0003: "invalid number literal" =>
"A number literal is malformed: a digit that its base does not allow, a
misplaced `_`, an empty exponent, or a suffix that is not a size unit.

```tessera
a = 0x1G      # `G` is not a hexadecimal digit
b = 1__000    # `_` may only separate single digits
c = 16_KB     # size literals use KiB, MiB or GiB
```

Size literals are integers with a binary unit: `16_KiB`, `4_MiB`, `1_GiB`.",

    E0004: "invalid escape sequence" =>
"A string contains a backslash escape that Tessera does not know.

```tessera
path = \"C:\\qdata\"   # `\\q` is not an escape
```

The escapes are `\\\\`, `\\'`, `\\\"`, `\\n`, `\\r`, `\\t`, `\\0` and
`\\u{...}`. Write `\\\\` for a literal backslash.",

    E0005: "source file is not valid UTF-8" =>
"Tessera source files are UTF-8 text. The file holds a byte sequence that is
not UTF-8, usually because it was saved in another encoding or is binary.

Re-save the file as UTF-8.",

    E0010: "indentation mixes tabs and spaces" =>
"The indentation of a line is not an extension of the indentation of the
block it is in, because one uses tabs and the other spaces. Tessera compares
indentation as text, so a tab never equals a number of spaces.

```tessera
def f(x: f32) -> f32:
    y = x      # four spaces
\treturn y   # a tab
```

Indent every line of a file the same way, preferably with four spaces.",

    E0011: "unindent does not match any outer indentation level" =>
"A line is indented less than the line before it, but not as far back as
any enclosing block.

```tessera
def f(x: f32) -> f32:
    if x > 0.0:
        x = 0.0
  return x     # two spaces: neither the `if` body nor the `def` body
```

Indent the line to the level of the block it belongs to.",

    E0012: "unexpected indent" =>
"A line is indented more than the line before it, but the line before does
not open a block (it does not end with `:`).

```tessera
x = 1
    y = 2
```

Remove the extra indentation, or end the previous line with `:` if it was
meant to open a block.",

    E0013: "expected an indented block" =>
"A line ending with `:` opens a block (the body of a `def`, `if`, `for`,
`while` or `with`), but the next line is not indented further.

```tessera
def f():
return 1
```

Indent the body, or write `pass` as an empty body.",

    E0014: "nesting too deep" =>
"Brackets, blocks or expressions are nested deeper than the compiler
accepts: 200 levels of brackets, 100 levels of blocks, 256 levels of
expression. Such code is almost always generated; split it into smaller
expressions or functions.",

    E0020: "unclosed delimiter" =>
"An opening `(`, `[` or `{` has no matching closing delimiter.

```tessera
y = f(x, (a + b)
```

Add the missing closing delimiter.",

    E0021: "mismatched closing delimiter" =>
"A closing delimiter does not match the innermost open one.

```tessera
y = f(x]
```

Close the innermost open delimiter first: `(` with `)`, `[` with `]`, `{`
with `}`.",

    E0022: "unmatched closing delimiter" =>
"A closing `)`, `]` or `}` appears with no delimiter open.

```tessera
y = x + 1)
```

Remove it, or add the opening delimiter it was meant to close.",

    E0030: "unexpected token" =>
"The parser found a token where the grammar does not allow it. The message
says what was expected instead.

```tessera
y = x + * 2
```

See the grammar summary in `spec/grammar.md`.",

    E0031: "missing `:`" =>
"The header of a block statement (`def`, `if`, `elif`, `else`, `for`,
`while`, `with`) must end with `:`.

```tessera
if x > 0
    y = x
```

Add the colon; `tessera check --fix` does it for you.",

    E0033: "decorator not followed by a function" =>
"Decorators such as `@kernel` or `@deterministic(seed=42)` apply to the
function defined right after them. Here something other than `def` follows.

```tessera
@kernel
x = 1
```

Put the decorator directly above a `def`, or remove it.",

    E0034: "`where` clause without constraints" =>
"A `where` clause must list at least one shape constraint.

```tessera
def f(x: f32[D]) -> f32[D] where:
    return x
```

List the constraints (`where D % 8 == 0, D <= 4096`) or remove `where`.",

    E0035: "invalid assignment target" =>
"Only names, attributes (`a.b`), subscripts (`a[i]`) and tuples of these can
be assigned to.

```tessera
f(x) = 3
a + b += 1
```

Assign to a variable, an element or an attribute instead.",

    E0036: "comparison operators cannot be chained" =>
"Tessera does not chain comparisons as Python does; `a < b < c` is an
error rather than a silent surprise.

```tessera
ok = 0 < i < n
```

Write `0 < i and i < n`.",

    E0037: "positional argument after keyword argument" =>
"In a call or a bracket argument list, positional arguments come first.

```tessera
y = op.matmul(tile_shape=(128, 128, 64), a, b)
```

Move the positional arguments before the keyword arguments.",

    E0038: "`break` or `continue` outside a loop" =>
"`break` and `continue` only make sense inside `for` or `while`.

```tessera
def f():
    break
```

Remove the statement or move it into a loop.",

    E0039: "`return` outside a function" =>
"`return` may only appear inside a `def`.

```tessera
return 3
```",

    E0041: "parameter without default after one with a default" =>
"Once a parameter has a default value, every later parameter needs one too.

```tessera
def f(eps: f32 = 1e-5, x: f32[N]):
    pass
```

Move the parameters with defaults to the end.",
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_sorted_and_unique() {
        for pair in CODES.windows(2) {
            assert!(
                pair[0].code < pair[1].code,
                "{} before {}",
                pair[0].code,
                pair[1].code
            );
        }
    }

    #[test]
    fn lookup_is_case_insensitive() {
        assert_eq!(Code::lookup("e0030").map(|i| i.code), Some(Code::E0030));
        assert!(Code::lookup("E9999").is_none());
    }
}
