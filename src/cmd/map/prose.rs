//! The map's words around its rows: the title, each group's line, the legend and the job's lines, each
//! wrapped or cut to the view's width, every name from the cluster through [`visible`].

use super::cells::Cell;
use super::picture::{Counts, Group, IdleShown, Map};
use super::view::{MAX_BODY_LINES, Shape, View, cut_middle, paint};
use crate::cmd::fit_plan::MoveJson;
use crate::runtime::terminal_text::visible;

/// The most moves listed under the map (`-o json` lists them all).
const MOVES_LISTED: usize = 20;

/// The first line(s): nodes, GPUs per state, the grouping, and how the map was summarised.
pub(crate) fn title(map: &Map, shape: Shape, view: &View) -> String {
    let states: Vec<String> = Cell::ALL
        .iter()
        .filter(|s| map.counts.of(**s) > 0)
        .map(|s| format!("{} {}", map.counts.of(*s), s.name()))
        .collect();
    let mut text = format!(
        "{} GPU nodes, {} GPUs: {}; grouped by {}",
        map.nodes,
        map.gpus,
        if states.is_empty() {
            "none".to_owned()
        } else {
            states.join(", ")
        },
        visible(&map.grouped_by)
    );
    match shape {
        Shape::Nodes => {}
        Shape::Collapsed => {
            text += &format!(
                " (summarised to {MAX_BODY_LINES} lines: nodes of a group with identical cells share one row, \
                 ×N)"
            )
        }
        Shape::Groups => {
            text += &format!(
                " (summarised to {MAX_BODY_LINES} lines: one line per group, its GPUs per state; the job's \
                 nodes keep their rows)"
            )
        }
    }
    wrap(&[(text.clone(), text.chars().count())], "", view.width)
}

/// A group's line: its domain and product, its nodes, its GPUs per state (`[block-a] H100  4 nodes  #20
/// .12`).
pub(crate) fn group_line(group: &Group, level: &str, view: &View) -> String {
    let title = match &group.domain {
        // The title names the level once; each group names its domain in brackets, then its product.
        Some(domain) => format!("[{}] {}", visible(domain), visible(&group.product)),
        None if level == "product" => visible(&group.product).into_owned(),
        None => format!("{} (no {})", visible(&group.product), visible(level)),
    };
    let (counts, counts_width) = glyph_counts(&group.counts, view.colour);
    let nodes = format!(
        "  {} node{}  ",
        group.nodes.len(),
        plural(group.nodes.len())
    );
    let rest = nodes.chars().count() + counts_width;
    let title = cut_middle(&title, view.width.saturating_sub(rest).max(10));
    format!("{title}{nodes}{counts}").trim_end().to_owned() + "\n"
}

/// `.12 #20 !1`: each state's glyph and count, the states with none left out.
fn glyph_counts(counts: &Counts, colour: bool) -> (String, usize) {
    let parts: Vec<(String, usize)> = Cell::ALL
        .iter()
        .filter(|s| counts.of(**s) > 0)
        .map(|s| {
            let n = counts.of(*s).to_string();
            (format!("{}{n}", paint(&[*s], colour)), 1 + n.len())
        })
        .collect();
    let width = parts
        .iter()
        .map(|(_, w)| w + 1)
        .sum::<usize>()
        .saturating_sub(1);
    let text: Vec<String> = parts.into_iter().map(|(t, _)| t).collect();
    (text.join(" "), width)
}

/// What each glyph means: the states this map can show, and why idle GPUs are not shown where they are not.
pub(crate) fn legend(map: &Map, view: &View) -> String {
    let planned = map
        .job
        .as_ref()
        .and_then(|j| j.plan.as_ref())
        .is_some_and(|p| !p.moves.is_empty());
    // The fleet's states first, then the plan's: what a plain map shows reads the same with a plan.
    let order = [
        Cell::Held,
        Cell::Idle,
        Cell::Shared,
        Cell::Free,
        Cell::Unhealthy,
        Cell::Unusable,
        Cell::Leaving,
        Cell::Arriving,
    ];
    let shown = |state: &&Cell| match state {
        Cell::Idle => map.idle == IdleShown::Shown,
        Cell::Leaving | Cell::Arriving => planned,
        _ => true,
    };
    let mut items: Vec<(String, usize)> = order
        .iter()
        .filter(shown)
        .map(|s| {
            let text = format!("{} {}", paint(&[*s], view.colour), s.meaning());
            (text, 2 + s.meaning().chars().count())
        })
        .collect();
    if map.job.is_some() {
        let mark = if view.colour { "\x1b[1m>\x1b[0m" } else { ">" };
        items.push((format!("{mark} the job's node"), 16));
    }
    let mut out = String::from("\n");
    out += &wrap(&items, "legend: ", view.width);
    let idle = match map.idle {
        IdleShown::Shown => None,
        IdleShown::NotRead => Some(
            "idle GPUs are not shown: give --prometheus-url to read dcgm-exporter's activity \
             (docs/utilization.md); held GPUs are all #",
        ),
        IdleShown::Unknown => Some(
            "idle GPUs are not shown: Prometheus's last answer was not whole, so no GPU is called idle",
        ),
    };
    if let Some(idle) = idle {
        out += &wrap(&[(idle.to_owned(), idle.chars().count())], "", view.width);
    }
    out
}

/// The job's lines: where it fits now, or the plan and its moves, or why there is none.
pub(crate) fn job(map: &Map, view: &View) -> String {
    let Some(job) = &map.job else {
        return String::new();
    };
    let say = |text: String| wrap(&[(text.clone(), text.chars().count())], "", view.width);
    let mut out = String::from("\n");
    if job.fits {
        out += &say(format!(
            "job: {} GPUs on one node fit now on {} node{} (marked >); nothing to move",
            job.gpus,
            job.nodes.len(),
            plural(job.nodes.len())
        ));
        return out;
    }
    let Some(plan) = &job.plan else {
        out += &say(format!(
            "job: {} GPUs on one node fit on no node now; --plan says which pods to move",
            job.gpus
        ));
        return out;
    };
    let Some(node) = &plan.node else {
        out += &say(format!(
            "plan: none: {}",
            visible(plan.why.as_deref().unwrap_or("-"))
        ));
        return out;
    };
    out += &say(format!(
        "plan: move {} pod{}, {} GPUs, so that {} GPUs are free on {} (marked >): delete each pod below; its \
         controller recreates it and the scheduler places it where shown",
        plan.moves.len(),
        plural(plan.moves.len()),
        plan.displaced_gpus.unwrap_or(0),
        job.gpus,
        visible(node)
    ));
    for step in plan.moves.iter().take(MOVES_LISTED) {
        out += &move_line(step, view.width);
    }
    if plan.moves.len() > MOVES_LISTED {
        let more = plan.moves.len() - MOVES_LISTED;
        out += &format!("  ... {more} more moves (-o json lists them)\n");
    }
    out
}

/// `  ns/pod (G GPUs): from -> to`, each name cut to a third of what the width leaves when the whole line
/// does not fit.
fn move_line(step: &MoveJson, width: usize) -> String {
    let pod = format!("{}/{}", visible(&step.namespace), visible(&step.pod));
    let (from, to) = (visible(&step.from), visible(&step.to));
    let gpus = format!(" ({} GPUs): ", step.gpus);
    let whole =
        2 + pod.chars().count() + gpus.len() + from.chars().count() + 4 + to.chars().count();
    let share = if whole <= width {
        usize::MAX
    } else {
        width.saturating_sub(2 + gpus.len() + 4) / 3
    };
    format!(
        "  {}{gpus}{} -> {}\n",
        cut_middle(&pod, share),
        cut_middle(&from, share),
        cut_middle(&to, share)
    )
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// `items` (text, columns it takes) on lines of at most `width` columns, `prefix` before the first, two
/// spaces between items; a text of one item is broken at its spaces, a word longer than a line cut.
fn wrap(items: &[(String, usize)], prefix: &str, width: usize) -> String {
    let mut words: Vec<(String, usize)> = Vec::new();
    for (text, columns) in items {
        // Coloured items are short and never broken: their columns are not their characters.
        if *columns != text.chars().count() || *columns <= width / 2 {
            words.push((text.clone(), *columns));
        } else {
            words.extend(text.split(' ').map(|w| (w.to_owned(), w.chars().count())));
        }
    }
    let gap = if items.len() > 1 { 2 } else { 1 };
    let mut out = String::new();
    let mut line = prefix.to_owned();
    let mut used = prefix.chars().count();
    let mut first = true;
    for (word, columns) in words {
        let (word, columns) = if columns > width {
            (cut_middle(&word, width), width)
        } else {
            (word, columns)
        };
        if !first && used + gap + columns > width {
            out += line.trim_end();
            out += "\n";
            line = " ".repeat(2);
            used = 2;
            first = true;
        }
        if !first {
            line += &" ".repeat(gap);
            used += gap;
        }
        line += &word;
        used += columns;
        first = false;
    }
    out += line.trim_end();
    out += "\n";
    out
}
