//! What the map's text is drawn with, shared by the rows (`draw`) and the words around them (`prose`): the view
//! asked for, the shape the fleet's size allows, the glyphs in colour, names cut to fit.

use super::cells::Cell;

/// The most lines of groups and rows drawn one node a row; past it the map is summarised.
pub(crate) const MAX_BODY_LINES: usize = 48;

/// How the text is drawn.
#[derive(Clone, Copy, Debug)]
pub(crate) struct View {
    /// Columns every line fits in.
    pub(crate) width: usize,
    /// ANSI colours beside the glyphs.
    pub(crate) colour: bool,
    /// The title, the groups' lines, the legend and the job's lines (`--no-headers`: the rows only).
    pub(crate) headers: bool,
}

/// How much of the fleet is drawn one node a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// Every node a row.
    Nodes,
    /// Nodes of a group with identical cells one row, `×N`.
    Collapsed,
    /// Every group one line of counts; only the nodes a job or plan touches keep a row.
    Groups,
}

/// Cells as glyphs, runs of one state in its colour when `colour`.
pub(crate) fn paint(cells: &[Cell], colour: bool) -> String {
    let mut out = String::new();
    for run in cells.chunk_by(|a, b| a == b) {
        let glyphs: String = run.iter().map(|c| c.glyph()).collect();
        match colour.then(|| colour_of(run[0])).flatten() {
            Some(code) => out += &format!("{code}{glyphs}\x1b[0m"),
            None => out += &glyphs,
        }
    }
    out
}

/// The colour of a state; held cells stay in the terminal's own colour.
pub(crate) fn colour_of(cell: Cell) -> Option<&'static str> {
    match cell {
        Cell::Held => None,
        Cell::Idle => Some("\x1b[33m"),
        Cell::Leaving => Some("\x1b[35m"),
        Cell::Shared => Some("\x1b[36m"),
        Cell::Arriving => Some("\x1b[1;32m"),
        Cell::Free => Some("\x1b[32m"),
        Cell::Unhealthy => Some("\x1b[31m"),
        Cell::Unusable => Some("\x1b[2m"),
    }
}

/// `text` in at most `width` characters: both ends kept (node names differ at their ends: a pool's prefix, a
/// suffix per node) and `…` between.
pub(crate) fn cut_middle(text: &str, width: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= width {
        return text.to_owned();
    }
    if width == 0 {
        return String::new();
    }
    let head = width / 2;
    let tail = width - 1 - head;
    let mut out: String = chars[..head].iter().collect();
    out.push('…');
    out.extend(&chars[chars.len() - tail..]);
    out
}
