//! The map as text: a group's line, then one row per node (a mark, its name cut to fit, its cells in blocks
//! of 8). Bounded whatever the fleet: past [`MAX_BODY_LINES`] lines, nodes whose cells are identical share
//! one row (`×N`), and past that again each group is one line of counts per state. Every name goes through
//! [`visible`], and every line fits the width asked for (80 columns by default).

use std::collections::HashMap;

use super::cells::Cell;
use super::picture::{Group, Map, MapNode};
use super::prose;
use super::view::{MAX_BODY_LINES, Shape, View, cut_middle, paint};
use crate::runtime::terminal_text::visible;

/// Cells of a block: a node of 8 GPUs is one block, one of 16 two blocks a space apart.
const BLOCK: usize = 8;

/// A node name is never cut shorter than this to make room for cells (the cells wrap instead).
const MIN_NAME: usize = 12;

/// One row: a node, or the nodes of a group whose cells are identical (`times`).
pub(crate) struct Row<'m> {
    name: &'m str,
    cells: &'m [Cell],
    unusable: Option<&'static str>,
    job: bool,
    times: usize,
}

/// The widths of a shape's rows.
struct Layout {
    name: usize,
    cells: usize,
    blocks_per_line: usize,
}

/// The map as text.
pub(crate) fn draw(map: &Map, view: &View) -> String {
    let shape = shape_of(map, view.width);
    let rows = rows(map, shape);
    let layout = layout(rows.iter().flatten(), view.width);
    let mut out = String::new();
    if view.headers {
        out += &prose::title(map, shape, view);
    }
    let mut shown_groups = 0;
    for (group, rows) in map.groups.iter().zip(&rows) {
        let kept = shape != Shape::Groups || !rows.is_empty() || shown_groups < MAX_BODY_LINES - 1;
        if !kept {
            continue;
        }
        shown_groups += 1;
        if view.headers || shape == Shape::Groups {
            out += &prose::group_line(group, &map.grouped_by, view);
        }
        for row in rows {
            out += &row_text(row, &layout, view);
        }
    }
    if view.headers {
        if shown_groups < map.groups.len() {
            let more = map.groups.len() - shown_groups;
            out += &format!("... {more} more groups (-o json lists every node)\n");
        }
        out += &prose::legend(map, view);
        out += &prose::job(map, view);
    }
    out
}

/// The fullest shape that fits [`MAX_BODY_LINES`].
pub(crate) fn shape_of(map: &Map, width: usize) -> Shape {
    for shape in [Shape::Nodes, Shape::Collapsed] {
        let rows = rows(map, shape);
        let layout = layout(rows.iter().flatten(), width);
        let lines: usize = rows.iter().flatten().map(|r| height(r, &layout)).sum();
        if map.groups.len() + lines <= MAX_BODY_LINES {
            return shape;
        }
    }
    Shape::Groups
}

/// Each group's rows in `shape`.
fn rows(map: &Map, shape: Shape) -> Vec<Vec<Row<'_>>> {
    map.groups.iter().map(|g| group_rows(g, shape)).collect()
}

fn group_rows(group: &Group, shape: Shape) -> Vec<Row<'_>> {
    let touched = |node: &&MapNode| {
        node.job
            || node
                .cells
                .iter()
                .any(|c| matches!(c, Cell::Leaving | Cell::Arriving))
    };
    match shape {
        Shape::Nodes => group.nodes.iter().map(row_of).collect(),
        Shape::Groups => group.nodes.iter().filter(touched).map(row_of).collect(),
        Shape::Collapsed => {
            let mut rows: Vec<Row<'_>> = Vec::new();
            let mut seen: HashMap<(&[Cell], Option<&str>), usize> = HashMap::new();
            for node in &group.nodes {
                // The job's nodes keep rows of their own: they are named in the job's lines.
                let key = (node.cells.as_slice(), node.unusable);
                match seen.get(&key).filter(|_| !touched(&node)) {
                    Some(at) => rows[*at].times += 1,
                    None => {
                        if !touched(&node) {
                            seen.insert(key, rows.len());
                        }
                        rows.push(row_of(node));
                    }
                }
            }
            rows
        }
    }
}

fn row_of(node: &MapNode) -> Row<'_> {
    Row {
        name: &node.name,
        cells: &node.cells,
        unusable: node.unusable,
        job: node.job,
        times: 1,
    }
}

/// What follows a row's cells: how many nodes it stands for, and why they are out.
fn note(row: &Row<'_>) -> String {
    let times = (row.times > 1).then(|| format!("×{}", row.times));
    let parts: Vec<&str> = times.as_deref().into_iter().chain(row.unusable).collect();
    parts.join(" ")
}

/// Columns of `n` cells drawn in blocks.
fn cells_width(n: usize) -> usize {
    n + n.saturating_sub(1) / BLOCK
}

fn layout<'r, 'm: 'r>(rows: impl Iterator<Item = &'r Row<'m>> + Clone, width: usize) -> Layout {
    let longest = rows
        .clone()
        .map(|r| visible(r.name).chars().count())
        .max()
        .unwrap_or(0);
    let most = rows.clone().map(|r| r.cells.len()).max().unwrap_or(0);
    let note = rows.map(|r| note(r).chars().count()).max().unwrap_or(0);
    let fixed = 2 + 2 + if note > 0 { 2 + note } else { 0 };
    let name = longest
        .min(width.saturating_sub(fixed + cells_width(most)))
        .max(MIN_NAME.min(longest));
    // Cells that do not fit beside the name wrap onto lines of their own, whole blocks a line.
    let room = width.saturating_sub(fixed + name);
    let blocks_per_line = ((room + 1) / (BLOCK + 1)).max(1);
    let cells = cells_width(most).min(blocks_per_line * (BLOCK + 1) - 1);
    Layout {
        name,
        cells,
        blocks_per_line,
    }
}

/// Lines a row takes.
fn height(row: &Row<'_>, layout: &Layout) -> usize {
    row.cells
        .len()
        .div_ceil(BLOCK)
        .div_ceil(layout.blocks_per_line)
        .max(1)
}

/// A row's lines: `> ` on the job's node, the name, the cells, the note.
fn row_text(row: &Row<'_>, layout: &Layout, view: &View) -> String {
    let blocks: Vec<&[Cell]> = row.cells.chunks(BLOCK).collect();
    let lines: Vec<(String, usize)> = blocks
        .chunks(layout.blocks_per_line)
        .map(|line| {
            let drawn: Vec<String> = line.iter().map(|b| paint(b, view.colour)).collect();
            let width = line.iter().map(|b| b.len()).sum::<usize>() + line.len() - 1;
            (drawn.join(" "), width)
        })
        .collect();
    let mark = match (row.job, view.colour) {
        (false, _) => "  ",
        (true, false) => "> ",
        (true, true) => "\x1b[1m>\x1b[0m ",
    };
    let name = cut_middle(&visible(row.name), layout.name);
    let (first, first_width) = lines.first().cloned().unwrap_or_default();
    let mut text = format!("{mark}{name}");
    pad(&mut text, layout.name - name.chars().count());
    text += "  ";
    text += &first;
    let note = note(row);
    if !note.is_empty() {
        pad(&mut text, layout.cells - first_width);
        text += "  ";
        text += &note;
    }
    text += "\n";
    for (line, _) in lines.iter().skip(1) {
        pad(&mut text, 2 + layout.name + 2);
        text += line;
        text += "\n";
    }
    text
}

/// `n` spaces at the end of `text`.
fn pad(text: &mut String, n: usize) {
    text.extend(std::iter::repeat_n(' ', n));
}
