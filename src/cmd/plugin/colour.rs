//! The plugin's colours: a node table's READY green or red, a non-empty ISSUES cell red, the header bold,
//! issue lines yellow. Only on a terminal (or `--color always`); the text itself is `scan`'s. And the
//! `--watch` screen: redrawn in place on a terminal, appended elsewhere. `NO_COLOR` (any value but "", as
//! no-color.org says) turns colour off and nothing else; `TERM=dumb` (a terminal that cannot move its
//! cursor) turns colour and the redraws off.

use std::io::{IsTerminal, Write};

use clap::ValueEnum;

/// When to colour the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Color {
    /// On a terminal, unless NO_COLOR is set to anything but "" or TERM is dumb.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// What the screen takes: colour, and escapes that clear and redraw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Screen {
    /// Colour the tables.
    pub(super) colour: bool,
    /// `--watch` clears the screen and draws from the top (else appends each new table).
    pub(super) redraw: bool,
}

impl Screen {
    /// For stdout, `--color` and the environment.
    pub(super) fn of(color: Color) -> Screen {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
        Screen::decide(color, std::io::stdout().is_terminal(), no_color, dumb)
    }

    fn decide(color: Color, terminal: bool, no_color: bool, dumb: bool) -> Screen {
        let capable = terminal && !dumb;
        Screen {
            colour: match color {
                Color::Always => true,
                Color::Never => false,
                Color::Auto => capable && !no_color,
            },
            redraw: capable,
        }
    }
}

/// With `redraw`: clear the screen and draw from the top. Else (a pipe, a file, a dumb terminal): append,
/// one block per change, separated by a blank line. An error when stdout cannot be written.
pub(super) fn draw(text: &str, redraw: bool) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    let now = jiff::Timestamp::now().strftime("%Y-%m-%d %H:%M:%S UTC");
    let header = format!("kubectl gpu-inventory --watch  {now}  (Ctrl-C to stop)\n");
    if redraw {
        write!(out, "\x1b[H\x1b[2J{header}{text}")?;
    } else {
        writeln!(out, "{header}{text}")?;
    }
    out.flush()
}

/// A document of `-o json|yaml|name|jsonpath` per change, as `kubectl get -w -o json` streams them: no
/// header, no clearing, nothing a reader of the format would have to skip; YAML documents each after `---`.
pub(super) fn stream(text: &str, yaml: bool) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    if yaml {
        writeln!(out, "---")?;
    }
    write!(out, "{text}")?;
    if !text.ends_with('\n') {
        writeln!(out)?;
    }
    out.flush()
}

const GREEN: &str = "\x1b[32m";
const RED: &str = "\x1b[31m";
const YELLOW: &str = "\x1b[33m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

/// Colours a node table: READY green or red, a non-empty ISSUES cell red, the header bold, issue lines
/// yellow. Columns are found from the header (render aligns every cell under its header name).
pub(super) fn colourise(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 256);
    let mut columns: Option<Vec<(usize, String)>> = None;
    let mut in_issues = false;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        let newline = &line[body.len()..];
        if body.is_empty() {
            columns = None;
            in_issues = false;
            out += line;
        } else if body.starts_with("NAME ") && body.contains(" READY ") {
            columns = Some(column_starts(body));
            out += &format!("{BOLD}{body}{RESET}{newline}");
        } else if body == "issues:" {
            in_issues = true;
            out += &format!("{BOLD}{body}{RESET}{newline}");
        } else if in_issues {
            out += &format!("{YELLOW}{body}{RESET}{newline}");
        } else if let Some(cols) = columns.as_ref().filter(|c| is_row(body, c)) {
            out += &colour_row(body, cols);
            out += newline;
        } else {
            out += line;
        }
    }
    out
}

/// (char offset, name) of each column of a header line: names are single words two or more spaces apart.
fn column_starts(header: &str) -> Vec<(usize, String)> {
    let chars: Vec<char> = header.chars().collect();
    let mut starts = Vec::new();
    for (i, c) in chars.iter().enumerate() {
        let starts_word = !c.is_whitespace()
            && (i == 0 || (i >= 2 && chars[i - 1] == ' ' && chars[i - 2] == ' '));
        if starts_word {
            let name: String = chars[i..]
                .iter()
                .take_while(|c| !c.is_whitespace())
                .collect();
            starts.push((i, name));
        }
    }
    starts
}

/// Whether `line` is a row of the table under `columns`: every cell is padded to its column's width, so two
/// spaces precede each column start (legend lines under the table are prose).
fn is_row(line: &str, columns: &[(usize, String)]) -> bool {
    let chars: Vec<char> = line.chars().collect();
    columns
        .iter()
        .filter(|(start, _)| *start >= 2 && *start < chars.len())
        .all(|(start, _)| chars[start - 1] == ' ' && chars[start - 2] == ' ')
}

fn colour_row(row: &str, columns: &[(usize, String)]) -> String {
    let chars: Vec<char> = row.chars().collect();
    let mut out = String::new();
    for (n, (start, name)) in columns.iter().enumerate() {
        let end = columns
            .get(n + 1)
            .map_or(chars.len(), |c| c.0)
            .min(chars.len());
        let cell: String = chars[(*start).min(chars.len())..end].iter().collect();
        let (value, pad) = cell.split_at(cell.trim_end().len());
        let colour = match (name.as_str(), value) {
            ("READY", "true") => Some(GREEN),
            ("READY", _) => Some(RED),
            ("ISSUES", v) if v != "-" && !v.is_empty() => Some(RED),
            _ => None,
        };
        match colour {
            Some(colour) => out += &format!("{colour}{value}{RESET}{pad}"),
            None => out += &cell,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "total_gpu_nodes: 2  ready_gpu_nodes: 1\n\
        NAME  READY  PRODUCT      GPUS  FREE  MEMORY  WORKLOAD  ISSUES\n\
        a     true   NVIDIA A100  8     8     -       -         -\n\
        bb    false  T4           1     0     -       -         NotReady\n\
        \n\
        issues:\n  bb: NotReady: Ready condition is False\n";

    #[test]
    fn legend_lines_under_the_table_are_not_rows() {
        let text = "NAME  READY  PRODUCT  ISSUES\na     false  x*       -\n* product named by a cloud-provider label\n";
        let coloured = colourise(text);
        assert!(
            coloured.ends_with("* product named by a cloud-provider label\n"),
            "{coloured}"
        );
    }

    #[test]
    fn colour_marks_ready_and_issues_and_keeps_the_text() {
        let coloured = colourise(TABLE);
        assert!(
            coloured.contains(&format!("{GREEN}true{RESET}")),
            "{coloured}"
        );
        assert!(
            coloured.contains(&format!("{RED}false{RESET}")),
            "{coloured}"
        );
        assert!(
            coloured.contains(&format!("{RED}NotReady{RESET}")),
            "{coloured}"
        );
        assert!(
            coloured.contains(&format!("{YELLOW}  bb: NotReady")),
            "{coloured}"
        );
        // A product with a space stays one cell; the summary line is untouched.
        assert!(coloured.contains("NVIDIA A100  8"), "{coloured}");
        let plain: String = coloured
            .replace(GREEN, "")
            .replace(RED, "")
            .replace(YELLOW, "")
            .replace(BOLD, "")
            .replace(RESET, "");
        assert_eq!(plain, TABLE);
    }

    #[test]
    fn no_color_turns_colour_off_and_a_dumb_terminal_colour_and_redraws() {
        let on = Screen {
            colour: true,
            redraw: true,
        };
        assert_eq!(Screen::decide(Color::Auto, true, false, false), on);
        assert_eq!(
            Screen::decide(Color::Auto, true, true, false),
            Screen {
                colour: false,
                redraw: true
            },
            "NO_COLOR is about colour only (no-color.org)"
        );
        for (no_color, dumb) in [(true, false), (false, true)] {
            let screen = Screen::decide(Color::Auto, true, no_color, dumb);
            assert!(!screen.colour);
            assert_eq!(screen.redraw, !dumb);
            // `--color always` is asked for; the redraws still follow the terminal.
            assert!(Screen::decide(Color::Always, true, no_color, dumb).colour);
        }
        assert_eq!(
            Screen::decide(Color::Auto, false, false, false),
            Screen {
                colour: false,
                redraw: false
            }
        );
    }
}
