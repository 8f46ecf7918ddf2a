//! The `flows` table (comfy-table): a row per flow, per-direction counts as `c2s / s2c`.

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{CellAlignment, ColumnConstraint, ContentArrangement, Table};

use crate::bedrock::GameSummary;
use crate::dissect::Dir;
use crate::mirror::{DirStats, FlowMirror};

fn pair(f: &FlowMirror, get: impl Fn(&DirStats) -> u64) -> String {
    format!("{} / {}", get(f.stats(Dir::C2s)), get(f.stats(Dir::S2c)))
}

fn endpoint(addr: std::net::SocketAddr, guid: Option<u64>) -> String {
    match guid {
        Some(g) => format!("{addr}\n{g:#018x}"),
        None => addr.to_string(),
    }
}

/// An empty table in the house style. Its cells are never wrapped: a
/// terminal too narrow for it loses columns instead ([`fit`]), so that no
/// address, name or figure is broken across lines.
fn sized() -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_content_arrangement(ContentArrangement::Disabled);
    t
}

/// The display width of the widest line of `text`.
fn widest(text: &str) -> usize {
    text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

/// `t` in at most `width` columns when given (a terminal): the columns of
/// `drop` hidden, in that order, until it fits. With all of them gone and
/// still too wide, it is printed whole (the terminal wraps its lines, but
/// no cell is cut in two).
fn fit(mut t: Table, width: Option<u16>, drop: &[usize]) -> String {
    let mut text = t.to_string();
    let Some(width) = width.map(usize::from) else {
        return text;
    };
    for &i in drop {
        if widest(&text) <= width {
            break;
        }
        if let Some(c) = t.column_mut(i) {
            c.set_constraint(ColumnConstraint::Hidden);
        }
        text = t.to_string();
    }
    text
}

/// The table of `flows`, fitted to `width` columns when given (a terminal).
pub(crate) fn flows_table(
    flows: &[(&FlowMirror, Option<&GameSummary>)],
    width: Option<u16>,
) -> String {
    let bedrock = flows.iter().any(|(_, g)| g.is_some());
    let mut t = sized();
    let mut header = vec![
        "flow",
        "client / guid",
        "server / guid",
        "protocol",
        "mtu",
        "state",
        "duration s",
        "packets c2s / s2c",
        "data",
        "ACKs",
        "NACKs",
        "lost",
        "resends",
        "duplicates",
        "RTT ms min / median / max",
        "messages",
        "splits",
        "anomalies",
    ];
    if bedrock {
        header.push("game");
    }
    t.set_header(header);
    for &(f, game) in flows {
        let rtt = match f.rtt_ms() {
            Some((min, med, max, _)) => format!("{min:.1} / {med:.1} / {max:.1}"),
            None => "-".to_string(),
        };
        t.add_row(vec![
            f.id.to_string(),
            endpoint(f.client, f.client_guid),
            endpoint(f.server, f.server_guid),
            f.protocol.map_or("-".into(), |p| p.to_string()),
            f.mtu.map_or("-".into(), |m| m.to_string()),
            match f.sessions {
                0 | 1 => f.state.as_str().to_string(),
                n => format!("{}\n{n} sessions", f.state.as_str()),
            },
            format!("{:.3}", f.last_ts.saturating_sub(f.first_ts).as_secs_f64()),
            pair(f, |s| s.packets),
            pair(f, |s| s.data_datagrams),
            pair(f, |s| s.acks),
            pair(f, |s| s.nacks),
            pair(f, |s| s.nacked.max(s.never_seen)),
            pair(f, |s| s.resends),
            pair(f, |s| s.duplicates),
            rtt,
            pair(f, |s| s.messages),
            pair(f, |s| s.splits),
            pair(f, |s| s.anomalies),
        ]);
        if bedrock {
            let row = t.row_mut(t.row_count() - 1).expect("the row just added");
            row.add_cell(game.map_or("-".into(), GameSummary::lines).into());
        }
    }
    for i in [0, 3, 4, 6] {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    // The least asked-for figures go first; flow, endpoints, state and
    // packets stay.
    fit(
        t,
        width,
        &[16, 13, 9, 10, 8, 6, 4, 3, 17, 15, 12, 14, 11, 18],
    )
}

/// A table in the style of [`flows_table`]: `header`, then `rows`; the first
/// `text_columns` columns are left-aligned and the others (counts) right-aligned.
/// Sized to `width` columns when given (a terminal).
pub(crate) fn counts_table(
    header: &[&str],
    rows: impl IntoIterator<Item = Vec<String>>,
    text_columns: usize,
    width: Option<u16>,
) -> String {
    let mut t = sized();
    t.set_header(header.to_vec());
    for r in rows {
        t.add_row(r);
    }
    for i in text_columns..header.len() {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    // The last columns first; the first one stays.
    let drop: Vec<usize> = (1..header.len()).rev().collect();
    fit(t, width, &drop)
}

/// The `flows` table in at most about 100 columns (IPv4 endpoints): the
/// endpoints on two lines, per-direction counts as `c2s/s2c`, the median
/// RTT; [`flows_table`] has every column (`--wide`), `--json` every figure.
pub(crate) fn flows_table_narrow(
    flows: &[(&FlowMirror, Option<&GameSummary>)],
    width: Option<u16>,
) -> String {
    let mut t = sized();
    // No inner vertical rules: ten columns of figures fit 100 columns.
    t.load_preset(comfy_table::presets::UTF8_HORIZONTAL_ONLY);
    t.set_header(vec![
        "flow",
        "client\nserver",
        "state",
        "packets\nc2s/s2c",
        "lost",
        "resends",
        "RTT ms\nmedian",
        "messages\nc2s/s2c",
        "anoma-\nlies",
    ]);
    let pair = |f: &FlowMirror, get: &dyn Fn(&DirStats) -> u64| {
        format!("{}/{}", get(f.stats(Dir::C2s)), get(f.stats(Dir::S2c)))
    };
    for &(f, game) in flows {
        let mut state = match f.sessions {
            0 | 1 => f.state.as_str().to_string(),
            n => format!("{}\n{n} sessions", f.state.as_str()),
        };
        // A Bedrock session under the RakNet state.
        if let Some(g) = game {
            state = format!("{state}\n{}", g.lines());
        }
        t.add_row(vec![
            f.id.to_string(),
            format!("{}\n{}", f.client, f.server),
            state,
            pair(f, &|s| s.packets),
            pair(f, &|s| s.nacked.max(s.never_seen)),
            pair(f, &|s| s.resends),
            f.rtt_ms()
                .map_or("-".into(), |(_, med, _, _)| format!("{med:.1}")),
            pair(f, &|s| s.messages),
            pair(f, &|s| s.anomalies),
        ]);
    }
    for (i, c) in t.column_iter_mut().enumerate() {
        c.set_padding((0, 1));
        if i != 1 && i != 2 {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    // Flow, endpoints and state stay; the others go from the least asked for.
    fit(t, width, &[8, 7, 5, 6, 4, 3])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_narrow_terminal_loses_columns_not_words() {
        let header = ["address", "state", "packets c2s / s2c", "bytes c2s / s2c"];
        let rows = vec![vec![
            "[2001:db8::1234]:19132".to_string(),
            "disconnected_by_client".to_string(),
            "57 / 69".to_string(),
            "19802 / 19870".to_string(),
        ]];
        let wide = counts_table(&header, rows.clone(), 2, None);
        assert!(widest(&wide) > 60, "{wide}");
        for width in [40, 60, 80] {
            let t = counts_table(&header, rows.clone(), 2, Some(width));
            assert!(t.contains("[2001:db8::1234]:19132"), "{width}: {t}");
            assert!(
                t.contains("disconnected_by_client") || widest(&t) <= width.into(),
                "{t}"
            );
            assert!(
                widest(&t) <= usize::from(width) || !t.contains("packets"),
                "{width}: {t}"
            );
        }
        // Wide enough: every column, as without a terminal.
        assert_eq!(counts_table(&header, rows.clone(), 2, Some(200)), wide);
        // Too narrow for the first column alone: printed whole, not broken.
        let t = counts_table(&header, rows, 2, Some(10));
        assert!(t.contains("[2001:db8::1234]:19132"), "{t}");
    }
}
