//! What a plain YAML scalar is, by the YAML 1.2 core schema, for the positions that want a number, a
//! boolean or anything ([`super::decode`] says which reads what).

use super::tree::is_plain_null;

/// An integer of the YAML 1.2 core schema: decimal with an optional sign, `0x` hex or `0o` octal.
pub(super) enum Integer {
    Signed(i64),
    Unsigned(u64),
}

pub(super) fn core_integer(text: &str) -> Option<Integer> {
    let (radix, digits, negative) = if let Some(hex) = text.strip_prefix("0x") {
        (16, hex, false)
    } else if let Some(octal) = text.strip_prefix("0o") {
        (8, octal, false)
    } else if let Some(decimal) = text.strip_prefix('-') {
        (10, decimal, true)
    } else {
        (10, text.strip_prefix('+').unwrap_or(text), false)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let magnitude = u64::from_str_radix(digits, radix).ok()?;
    if negative {
        i64::try_from(-i128::from(magnitude))
            .ok()
            .map(Integer::Signed)
    } else {
        Some(Integer::Unsigned(magnitude))
    }
}

/// A float of the YAML 1.2 core schema (integers included): `1.5`, `.5`, `1e3`, `-.inf`, `.nan`.
pub(super) fn core_float(text: &str) -> Option<f64> {
    if let Some(integer) = core_integer(text) {
        return Some(match integer {
            Integer::Signed(n) => n as f64,
            Integer::Unsigned(n) => n as f64,
        });
    }
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let magnitude = match unsigned {
        ".inf" | ".Inf" | ".INF" => f64::INFINITY,
        ".nan" | ".NaN" | ".NAN" if unsigned.len() == text.len() => return Some(f64::NAN),
        // Rust also reads `inf` and `NaN`; YAML does not, so only digits, dots, signs and exponents pass.
        _ if unsigned.bytes().any(|b| b.is_ascii_digit())
            && unsigned
                .bytes()
                .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-')) =>
        {
            unsigned.parse().ok()?
        }
        _ => return None,
    };
    Some(if negative { -magnitude } else { magnitude })
}

/// What an untyped position reads a plain scalar as (see [`super::decode`]).
pub(super) enum Untyped {
    Null,
    Bool(bool),
    Unsigned(u64),
    Signed(i64),
    Float(f64),
    Text,
}

pub(super) fn untyped(text: &str) -> Untyped {
    match text {
        _ if is_plain_null(text) => Untyped::Null,
        "true" | "True" | "TRUE" => Untyped::Bool(true),
        "false" | "False" | "FALSE" => Untyped::Bool(false),
        // A number only when it prints back as written: `08`, `+5`, `1.10`, `1e3` keep their text.
        _ => match (
            text.parse::<u64>(),
            text.parse::<i64>(),
            text.parse::<f64>(),
        ) {
            (Ok(n), _, _) if n.to_string() == text => Untyped::Unsigned(n),
            (_, Ok(n), _) if n.to_string() == text => Untyped::Signed(n),
            (_, _, Ok(n)) if n.is_finite() && n.to_string() == text => Untyped::Float(n),
            _ => Untyped::Text,
        },
    }
}

pub(super) fn core_bool(text: &str) -> Option<bool> {
    match text {
        "true" | "True" | "TRUE" => Some(true),
        "false" | "False" | "FALSE" => Some(false),
        _ => None,
    }
}
