//! How messages list names.

/// How many names a message lists before it says "and N more".
pub(crate) const MAX_NAMED_NODES: usize = 10;

/// `a, b, c` or `a, b, ... and 7 more` past [`MAX_NAMED_NODES`].
pub(crate) fn capped_list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.collect();
    let shown = names
        .iter()
        .take(MAX_NAMED_NODES)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    match names.len().saturating_sub(MAX_NAMED_NODES) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}
