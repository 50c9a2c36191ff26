//! A resource quantity as a node advertised it, read once.

use std::fmt;

/// A quantity of an extended resource or a DRA device count: the text the API server printed (kept, so the
/// publishers show what the node said) and its value, parsed once where it is read. Two amounts are equal
/// when their texts are (the value is derived from the text).
#[derive(Clone, Debug, Default)]
pub struct Amount {
    text: String,
    value: Option<f64>,
}

impl Amount {
    /// The amount of a quantity as the API server printed it (`"8"`, `"1k"`, `"lots"`).
    pub fn parse(text: impl Into<String>) -> Amount {
        let text = text.into();
        let value = quantity_value(&text);
        Amount { text, value }
    }

    /// An amount counted by the core (DRA devices): no text to parse.
    pub fn count(n: u64) -> Amount {
        Amount {
            text: n.to_string(),
            value: Some(n as f64),
        }
    }

    /// The text as the node advertised it.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Its value; `None` when the text is no quantity.
    pub fn value(&self) -> Option<f64> {
        self.value
    }

    /// Its value as a whole count (rounded down); `None` when it is no quantity or below 0.
    pub fn whole(&self) -> Option<u64> {
        self.value.filter(|v| *v >= 0.0).map(|v| v.floor() as u64)
    }

    /// Whether its value is above 0.
    pub fn is_positive(&self) -> bool {
        self.value.is_some_and(|v| v > 0.0)
    }
}

impl PartialEq for Amount {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Eq for Amount {}

impl PartialEq<&str> for Amount {
    fn eq(&self, other: &&str) -> bool {
        self.text == *other
    }
}

impl From<&str> for Amount {
    fn from(text: &str) -> Amount {
        Amount::parse(text)
    }
}

impl From<String> for Amount {
    fn from(text: String) -> Amount {
        Amount::parse(text)
    }
}

impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// The value of a quantity as a number, for the plain forms extended resources use ("8", "0", "1k", "500m").
/// `None` when it does not parse; callers treat that as unknown, never as a panic.
pub fn quantity_value(quantity: &str) -> Option<f64> {
    const SUFFIXES: [(&str, f64); 13] = [
        ("Ki", 1024.0),
        ("Mi", 1_048_576.0),
        ("Gi", 1_073_741_824.0),
        ("Ti", 1_099_511_627_776.0),
        ("Pi", 1_125_899_906_842_624.0),
        ("Ei", 1_152_921_504_606_846_976.0),
        ("n", 1e-9),
        ("u", 1e-6),
        ("m", 1e-3),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
    ];
    let quantity = quantity.trim();
    let (number, factor) = SUFFIXES
        .iter()
        .find_map(|(suffix, factor)| quantity.strip_suffix(suffix).map(|n| (n, *factor)))
        .unwrap_or((quantity, 1.0));
    let digits_ok = !number.is_empty()
        && number.bytes().all(|b| {
            b.is_ascii_digit() || b == b'.' || b == b'+' || b == b'-' || b == b'e' || b == b'E'
        });
    if !digits_ok {
        return None;
    }
    number
        .parse::<f64>()
        .ok()
        .map(|n| n * factor)
        .filter(|v| v.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_extended_resource_quantities() {
        assert_eq!(quantity_value("8"), Some(8.0));
        assert_eq!(quantity_value("0"), Some(0.0));
        assert_eq!(quantity_value("1k"), Some(1000.0));
        assert_eq!(quantity_value("500m"), Some(0.5));
        assert_eq!(quantity_value("2Ki"), Some(2048.0));
        assert_eq!(quantity_value("lots"), None);
        assert_eq!(quantity_value(""), None);
        assert_eq!(quantity_value("1e999"), None);
    }

    #[test]
    fn an_amount_keeps_its_text_and_reads_its_value_once() {
        let k = Amount::parse("1k");
        assert_eq!((k.text(), k.whole()), ("1k", Some(1000)));
        assert_eq!(Amount::parse("500m").whole(), Some(0));
        assert_eq!(Amount::parse("-2").whole(), None);
        assert_eq!(Amount::parse("lots").value(), None);
        assert!(!Amount::parse("0").is_positive());
        assert_eq!(Amount::count(8), Amount::parse("8"));
    }
}
