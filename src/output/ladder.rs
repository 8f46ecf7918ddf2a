//! `handshake --svg`: connection attempts drawn as a ladder diagram, as
//! Wireshark's flow graph draws them. Time runs down, a row per step (rows
//! evenly spaced, each with its time since the attempt began on the left),
//! the client's column on the left and the server's on the right, an arrow
//! per step in its direction. An attempt that failed has the step where it
//! stopped in red, and its outcome and diagnosis in red under it. RakNet
//! attempts and NetherNet joins alike; attempts one under the other.

use std::fmt::Write as _;

use crate::dissect::Dir;
use crate::mirror::handshake::Attempt;

const WIDTH: u32 = 1000;
/// The time column, then the two lifelines.
const TIME_X: u32 = 90;
const CLIENT_X: u32 = 230;
const SERVER_X: u32 = 850;
/// One row: a step, a heading line, a line of diagnosis.
const ROW: u32 = 24;
/// A label's characters at most (the rest elided).
const LABEL: usize = 84;
/// A diagnosis line's characters (longer ones wrap).
const LINE: usize = 130;
/// The failing step's colour, and the arrows'.
const RED: &str = "#c62828";
const INK: &str = "#263238";
const C2S: &str = "#1f77b4";
const S2C: &str = "#e4700a";

/// Text made safe inside an SVG element or attribute.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// `s` cut to `n` characters, an ellipsis marking the cut.
fn elide(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
    t.push('…');
    t
}

/// `s` in lines of at most `n` characters, broken at spaces.
fn wrap(s: &str, n: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in s.split(' ') {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > n {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// The step where a failed attempt stopped: its last alert, error or
/// abort; for a fingerprint mismatch, the certificate the diagnosis names;
/// otherwise its last step. `None` for an attempt that succeeded.
fn failing_step(a: &Attempt) -> Option<usize> {
    if a.accepted || a.steps.is_empty() {
        return None;
    }
    if a.outcome == "fingerprint_mismatch" {
        let named = a.steps.iter().rposition(|s| {
            s.step == "certificate_fingerprint"
                && !s.detail.is_empty()
                && a.diagnosis.contains(&s.detail)
        });
        if named.is_some() {
            return named;
        }
    }
    a.steps
        .iter()
        .rposition(|s| matches!(s.step, "alert" | "stun_error" | "sctp_abort"))
        .or(Some(a.steps.len() - 1))
}

/// The attempts as one SVG picture.
pub(crate) fn ladder(attempts: &[Attempt]) -> String {
    let mut body = String::new();
    let mut y = ROW;
    for a in attempts {
        y = attempt(a, y, &mut body) + ROW;
    }
    if attempts.is_empty() {
        let _ = write!(
            body,
            r#"<text x="{}" y="{}" fill="{INK}">No connection attempt in the capture.</text>"#,
            WIDTH / 2,
            y + ROW / 2
        );
        y += 2 * ROW;
    }
    format!(
        concat!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" "#,
            r#"font-family="DejaVu Sans Mono, monospace" font-size="12">"#,
            r#"<defs>"#,
            r#"<marker id="c2s" viewBox="0 0 10 10" refX="10" refY="5" markerUnits="userSpaceOnUse" markerWidth="10" markerHeight="10" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="{c2s}"/></marker>"#,
            r#"<marker id="s2c" viewBox="0 0 10 10" refX="10" refY="5" markerUnits="userSpaceOnUse" markerWidth="10" markerHeight="10" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="{s2c}"/></marker>"#,
            r#"<marker id="red" viewBox="0 0 10 10" refX="10" refY="5" markerUnits="userSpaceOnUse" markerWidth="10" markerHeight="10" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="{red}"/></marker>"#,
            r#"</defs><rect width="100%" height="100%" fill="white"/>{body}</svg>"#,
            "\n"
        ),
        w = WIDTH,
        h = y,
        c2s = C2S,
        s2c = S2C,
        red = RED,
        body = body
    )
}

/// One attempt drawn from `top`; the `y` below it.
fn attempt(a: &Attempt, top: u32, out: &mut String) -> u32 {
    let addr = |s: Option<std::net::SocketAddr>| s.map_or("?".into(), |s| s.to_string());
    let transport = if a.nethernet { "NetherNet" } else { "RakNet" };
    let colour = if a.accepted { INK } else { RED };
    let mut y = top;
    let _ = write!(
        out,
        r#"<g class="attempt" data-flow="{}" data-outcome="{}"><text x="10" y="{y}" font-weight="bold" fill="{INK}">{}</text>"#,
        a.flow,
        a.outcome,
        escape(&format!(
            "flow {} attempt {} ({transport})  {} → {}",
            a.flow,
            a.number,
            addr(a.client),
            addr(a.server)
        ))
    );
    y += ROW;
    for (x, who, side) in [
        (CLIENT_X, "client", a.client),
        (SERVER_X, "server", a.server),
    ] {
        let _ = write!(
            out,
            r#"<text x="{x}" y="{y}" text-anchor="middle" font-weight="bold" fill="{INK}">{} {}</text>"#,
            who,
            escape(&addr(side))
        );
    }
    let line_top = y + 6;
    y += ROW;
    let red = failing_step(a);
    for (i, s) in a.steps.iter().enumerate() {
        let failed = red == Some(i);
        let t = s.ts.saturating_sub(a.start).as_secs_f64();
        let _ = write!(
            out,
            r#"<text x="{TIME_X}" y="{}" text-anchor="end" fill="{INK}">{t:+.6}</text>"#,
            y + 4
        );
        let label = if s.detail.is_empty() {
            s.step.to_string()
        } else {
            format!("{}  {}", s.step, s.detail)
        };
        let label = escape(&elide(&label, LABEL));
        let (from, to, marker, colour) = match s.dir {
            Some(Dir::C2s) => (CLIENT_X, SERVER_X, "c2s", C2S),
            Some(Dir::S2c) => (SERVER_X, CLIENT_X, "s2c", S2C),
            None => (CLIENT_X, CLIENT_X, "", INK),
        };
        let (marker, colour) = if failed {
            ("red", RED)
        } else {
            (marker, colour)
        };
        if from != to {
            let _ = write!(
                out,
                r#"<line x1="{from}" y1="{y}" x2="{to}" y2="{y}" stroke="{colour}" stroke-width="{}" marker-end="url(#{marker})"/>"#,
                if failed { 2.5 } else { 1.5 }
            );
        }
        let _ = write!(
            out,
            r#"<text class="step{}" x="{}" y="{}" text-anchor="middle" fill="{colour}" data-frame="{}">{label}</text>"#,
            if failed { " failed" } else { "" },
            (CLIENT_X + SERVER_X) / 2,
            y - 4,
            s.frame
        );
        y += ROW;
    }
    if a.steps_omitted > 0 {
        let _ = write!(
            out,
            r#"<text x="{}" y="{y}" text-anchor="middle" fill="{INK}">({} more steps not shown)</text>"#,
            (CLIENT_X + SERVER_X) / 2,
            a.steps_omitted
        );
        y += ROW;
    }
    for x in [CLIENT_X, SERVER_X] {
        let _ = write!(
            out,
            r##"<line x1="{x}" y1="{line_top}" x2="{x}" y2="{}" stroke="#90a4ae" stroke-dasharray="4 3"/>"##,
            y - ROW / 2
        );
    }
    let verdict = format!("{}: {}", a.outcome, a.diagnosis);
    for (i, line) in wrap(&verdict, LINE).iter().enumerate() {
        let weight = if i == 0 { r#" font-weight="bold""# } else { "" };
        let _ = write!(
            out,
            r#"<text class="outcome" x="10" y="{y}" fill="{colour}"{weight}>{}</text>"#,
            escape(line)
        );
        y += ROW - 6;
    }
    out.push_str("</g>");
    y
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_cut_and_wrapped() {
        assert_eq!(escape(r#"<a & "b">"#), "&lt;a &amp; &quot;b&quot;&gt;");
        assert_eq!(elide("abcdef", 4), "abc…");
        assert_eq!(elide("abc", 4), "abc");
        assert_eq!(wrap("aa bb cc", 5), ["aa bb", "cc"]);
    }

    #[test]
    fn no_attempt_is_said() {
        let svg = ladder(&[]);
        assert!(svg.starts_with("<svg") && svg.contains("No connection attempt"));
    }
}
