//! `--group-by`: the rows of `scan`'s and the kubectl plugin's table. The fixed groupings (node, product,
//! namespace, vendor) and, since topology, any level: `nvlink` or a node label key, one row per domain. A
//! label key cannot be an enum's value, so this is a value parser of its own rather than clap's `ValueEnum`.

use crate::inventory::model::NVLINK;

/// Rows of the `scan` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupBy {
    /// One row per GPU node.
    Node,
    /// One row per GPU model.
    Product,
    /// One row per namespace and resource.
    Namespace,
    /// One row per vendor.
    Vendor,
    /// One row per domain of this topology level (`nvlink` or a node label key) and product.
    Level(String),
}

/// What `--help` and the parser's errors name.
pub const GROUP_BY_VALUES: &str = "node, product, namespace, vendor, nvlink or a node label key";

impl GroupBy {
    /// The topology level the rows are the domains of, if they are.
    pub fn level(&self) -> Option<&str> {
        match self {
            GroupBy::Level(level) => Some(level),
            _ => None,
        }
    }

    /// The label key a scan must read as a topology level for these rows (`nvlink` is read anyway).
    pub fn extra_level(&self) -> Option<&str> {
        self.level().filter(|level| *level != NVLINK)
    }
}

/// Parses `--group-by`: a fixed grouping by its name, else `nvlink` or a node label key (checked as a key:
/// letters, digits, `-`, `_`, `.`, `/`). A mistyped grouping (`nodes`) is a key no node has; the table then
/// says so.
pub fn parse_group_by(text: &str) -> Result<GroupBy, String> {
    let text = text.trim();
    Ok(match text {
        "node" => GroupBy::Node,
        "product" => GroupBy::Product,
        "namespace" => GroupBy::Namespace,
        "vendor" => GroupBy::Vendor,
        "" => return Err(format!("empty; name {GROUP_BY_VALUES}")),
        level => {
            crate::inventory::selector::valid_key(level)
                .map_err(|e| format!("{e}; name {GROUP_BY_VALUES}"))?;
            GroupBy::Level(level.to_owned())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixed_groupings_keep_their_names_and_anything_else_is_a_level() {
        assert_eq!(parse_group_by("node"), Ok(GroupBy::Node));
        assert_eq!(parse_group_by("product"), Ok(GroupBy::Product));
        assert_eq!(parse_group_by("namespace"), Ok(GroupBy::Namespace));
        assert_eq!(parse_group_by(" vendor "), Ok(GroupBy::Vendor));
        let nvlink = parse_group_by("nvlink").unwrap();
        assert_eq!(nvlink.level(), Some("nvlink"));
        assert_eq!(nvlink.extra_level(), None, "nvlink is no label");
        let block = parse_group_by("cloud.google.com/gce-topology-block").unwrap();
        assert_eq!(
            block.extra_level(),
            Some("cloud.google.com/gce-topology-block")
        );
        assert_eq!(GroupBy::Node.level(), None);
    }

    #[test]
    fn an_empty_or_malformed_key_is_refused_with_the_choices() {
        for bad in ["", "  ", "rack=r1", "a b"] {
            let err = parse_group_by(bad).unwrap_err();
            assert!(err.contains(GROUP_BY_VALUES), "{bad:?}: {err}");
        }
    }
}
