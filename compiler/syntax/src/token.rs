//! The tokens the parser sees, after lexing and the layout pass.

use std::fmt;

/// A token of the layout-processed stream. Literal tokens carry their value;
/// a literal that failed to lex carries a placeholder and its error has
/// already been reported.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok<'a> {
    Name(&'a str),
    Int(u64),
    Float(f64),
    /// A size literal (`16_KiB`) in bytes.
    Size(u64),
    Str(String),
    /// A character that starts no token; reported by the lexer.
    Error,

    Newline,
    Indent,
    Dedent,

    // keywords
    And,
    As,
    Assert,
    Break,
    Continue,
    Def,
    Del,
    Effects,
    Elif,
    Else,
    False,
    For,
    From,
    If,
    Import,
    In,
    Is,
    Mut,
    None,
    Not,
    Or,
    Pass,
    Return,
    True,
    Where,
    While,
    With,

    // delimiters
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,

    // punctuation and operators
    Comma,
    Colon,
    Semi,
    Dot,
    DotDot,
    DotDotEq,
    Arrow,
    At,
    Assign,
    EqEq,
    NotEq,
    Lt,
    Le,
    Gt,
    Ge,
    Plus,
    Minus,
    Star,
    Slash,
    SlashSlash,
    Percent,
    StarStar,
    Amp,
    Pipe,
    Caret,
    Tilde,
    Shl,
    Shr,
    PlusEq,
    MinusEq,
    StarEq,
    SlashEq,
    SlashSlashEq,
    PercentEq,
    StarStarEq,
    AmpEq,
    PipeEq,
    CaretEq,
    ShlEq,
    ShrEq,
    AtEq,
}

impl Tok<'_> {
    /// The spelling of a keyword or punctuation token.
    pub fn text(&self) -> Option<&'static str> {
        use Tok::*;
        Some(match self {
            And => "and",
            As => "as",
            Assert => "assert",
            Break => "break",
            Continue => "continue",
            Def => "def",
            Del => "del",
            Effects => "effects",
            Elif => "elif",
            Else => "else",
            False => "False",
            For => "for",
            From => "from",
            If => "if",
            Import => "import",
            In => "in",
            Is => "is",
            Mut => "mut",
            None => "None",
            Not => "not",
            Or => "or",
            Pass => "pass",
            Return => "return",
            True => "True",
            Where => "where",
            While => "while",
            With => "with",
            LParen => "(",
            RParen => ")",
            LBracket => "[",
            RBracket => "]",
            LBrace => "{",
            RBrace => "}",
            Comma => ",",
            Colon => ":",
            Semi => ";",
            Dot => ".",
            DotDot => "..",
            DotDotEq => "..=",
            Arrow => "->",
            At => "@",
            Assign => "=",
            EqEq => "==",
            NotEq => "!=",
            Lt => "<",
            Le => "<=",
            Gt => ">",
            Ge => ">=",
            Plus => "+",
            Minus => "-",
            Star => "*",
            Slash => "/",
            SlashSlash => "//",
            Percent => "%",
            StarStar => "**",
            Amp => "&",
            Pipe => "|",
            Caret => "^",
            Tilde => "~",
            Shl => "<<",
            Shr => ">>",
            PlusEq => "+=",
            MinusEq => "-=",
            StarEq => "*=",
            SlashEq => "/=",
            SlashSlashEq => "//=",
            PercentEq => "%=",
            StarStarEq => "**=",
            AmpEq => "&=",
            PipeEq => "|=",
            CaretEq => "^=",
            ShlEq => "<<=",
            ShrEq => ">>=",
            AtEq => "@=",
            Name(_) | Int(_) | Float(_) | Size(_) | Str(_) | Error | Newline | Indent | Dedent => return Option::None,
        })
    }

    /// The closing delimiter for an opening one.
    pub fn closer(&self) -> Option<Tok<'static>> {
        match self {
            Tok::LParen => Some(Tok::RParen),
            Tok::LBracket => Some(Tok::RBracket),
            Tok::LBrace => Some(Tok::RBrace),
            _ => Option::None,
        }
    }

    pub fn is_closer(&self) -> bool {
        matches!(self, Tok::RParen | Tok::RBracket | Tok::RBrace)
    }
}

/// How a token is named in a message: "`(`", "name `x`", "end of line".
impl fmt::Display for Tok<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Name(n) => write!(f, "name `{n}`"),
            Tok::Int(v) => write!(f, "number `{v}`"),
            Tok::Float(v) => write!(f, "number `{v:?}`"),
            Tok::Size(v) => write!(f, "size `{v}`"),
            Tok::Str(s) => write!(f, "string {s:?}"),
            Tok::Error => f.write_str("invalid character"),
            Tok::Newline => f.write_str("end of line"),
            Tok::Indent => f.write_str("indentation"),
            Tok::Dedent => f.write_str("end of block"),
            other => write!(f, "`{}`", other.text().unwrap_or("?")),
        }
    }
}
