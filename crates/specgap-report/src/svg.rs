//! Inline SVG charts for the HTML report: plain SVG 1.1 elements with their own styling, no
//! script, no external resource, readable offline and in print.
//!
//! - [`score_across_submissions`]: seed 000 Figure 4 — per agent, Partial and Literal Score
//!   bars at submissions 1–4, a line through the Partial bars, a dashed Full@1 line.
//! - [`clean_against_residual`]: seed 001 Figure 1 — per agent, Clean and Residual success.
//! - [`scatter`]: seed 002 Figure 4's Recall–Quality relation, one point per group.
//! - [`curves`]: seed 002 Figure 5 — Quality against oracle coverage.
//!
//! Values are fractions in [0, 1] unless an axis says otherwise; charts draw percentages.

use std::fmt::Write as _;

const PARTIAL: &str = "#2b6cb0";
const LITERAL: &str = "#a0aec0";
const FULL: &str = "#c05621";
const CLEAN: &str = "#2f855a";
const RESIDUAL: &str = "#c53030";
const INK: &str = "#1a202c";
const GRID: &str = "#e2e8f0";
const PALETTE: &[&str] = &["#2b6cb0", "#c05621", "#2f855a", "#6b46c1", "#b7791f", "#c53030", "#319795", "#d53f8c"];

/// Escapes text for XML / HTML content and attribute values (the shared escaper).
pub use specgap_protocol::escape::html as escape;

fn open_svg(width: f64, height: f64, title: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {width} {height}\" width=\"{width}\" height=\"{height}\" role=\"img\" aria-label=\"{t}\" font-family=\"sans-serif\" font-size=\"11\"><title>{t}</title>",
        t = escape(title)
    )
}

fn text(out: &mut String, x: f64, y: f64, anchor: &str, body: &str) {
    let _ = write!(out, "<text x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"{anchor}\" fill=\"{INK}\">{}</text>", escape(body));
}

fn line(out: &mut String, (x1, y1): (f64, f64), (x2, y2): (f64, f64), stroke: &str, extra: &str) {
    let _ = write!(out, "<line x1=\"{x1:.1}\" y1=\"{y1:.1}\" x2=\"{x2:.1}\" y2=\"{y2:.1}\" stroke=\"{stroke}\" {extra}/>");
}

fn rect(out: &mut String, x: f64, y: f64, w: f64, h: f64, fill: &str, label: &str) {
    let _ = write!(
        out,
        "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{h:.1}\" fill=\"{fill}\"><title>{}</title></rect>",
        escape(label)
    );
}

/// A y axis from 0 to 100 % with grid lines every 20, at `x0`, spanning `top..bottom`.
fn percent_axis(out: &mut String, x0: f64, x1: f64, top: f64, bottom: f64, label: bool) {
    for step in 0..=5 {
        let v = f64::from(step) * 20.0;
        let y = bottom - (bottom - top) * v / 100.0;
        line(out, (x0, y), (x1, y), GRID, "");
        if label {
            text(out, x0 - 4.0, y + 3.5, "end", &format!("{v:.0}"));
        }
    }
}

fn legend(out: &mut String, x: f64, y: f64, items: &[(&str, &str, bool)]) {
    let mut cx = x;
    for (name, color, dashed) in items {
        if *dashed {
            line(out, (cx, y - 4.0), (cx + 14.0, y - 4.0), color, "stroke-width=\"2\" stroke-dasharray=\"4 3\"");
        } else {
            rect(out, cx, y - 9.0, 12.0, 10.0, color, name);
        }
        text(out, cx + 18.0, y, "start", name);
        cx += 24.0 + 7.0 * name.len() as f64;
    }
}

/// One panel of [`score_across_submissions`].
#[derive(Debug, Clone, PartialEq)]
pub struct SubmissionPanel {
    /// Panel title (agent, start…).
    pub label: String,
    /// Partial Score@1..4.
    pub partial: [f64; 4],
    /// Literal Score@1..4, if run.
    pub literal: Option<[f64; 4]>,
    /// Full@1 Score.
    pub full_at_1: f64,
}

/// Seed 000 Figure 4: Score (%) across the submission budget, one panel per agent.
pub fn score_across_submissions(panels: &[SubmissionPanel]) -> String {
    let per_row = panels.len().clamp(1, 4);
    let (pw, ph) = (200.0, 170.0);
    let rows = panels.len().div_ceil(per_row).max(1);
    let width = 40.0 + pw * per_row as f64;
    let height = 30.0 + ph * rows as f64;
    let mut out = open_svg(width, height, "Score across submissions: Partial and Literal bars, Partial line, dashed Full@1");
    legend(&mut out, 40.0, 16.0, &[("Partial", PARTIAL, false), ("Literal", LITERAL, false), ("Full@1", FULL, true)]);
    for (i, panel) in panels.iter().enumerate() {
        let ox = 40.0 + pw * (i % per_row) as f64;
        let oy = 30.0 + ph * (i / per_row) as f64;
        let (top, bottom) = (oy + 18.0, oy + ph - 30.0);
        let (left, right) = (ox + 6.0, ox + pw - 12.0);
        percent_axis(&mut out, left, right, top, bottom, i % per_row == 0);
        text(&mut out, (left + right) / 2.0, oy + 10.0, "middle", &panel.label);
        let y_of = |v: f64| bottom - (bottom - top) * v.clamp(0.0, 1.0);
        let slot = (right - left) / 4.0;
        let mut points = Vec::new();
        for k in 0..4 {
            let sx = left + slot * k as f64;
            let bar = slot * 0.36;
            let px = sx + slot * 0.12;
            let p = panel.partial[k];
            rect(&mut out, px, y_of(p), bar, bottom - y_of(p), PARTIAL, &format!("Partial@{} {:.1}", k + 1, p * 100.0));
            points.push((px + bar / 2.0, y_of(p)));
            if let Some(literal) = panel.literal {
                let l = literal[k];
                rect(&mut out, px + bar, y_of(l), bar, bottom - y_of(l), LITERAL, &format!("Literal@{} {:.1}", k + 1, l * 100.0));
            }
            text(&mut out, sx + slot / 2.0, bottom + 13.0, "middle", &(k + 1).to_string());
        }
        let path: Vec<String> = points.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
        let _ = write!(out, "<polyline points=\"{}\" fill=\"none\" stroke=\"{INK}\" stroke-width=\"1.5\"/>", path.join(" "));
        let fy = y_of(panel.full_at_1);
        line(&mut out, (left, fy), (right, fy), FULL, "stroke-width=\"2\" stroke-dasharray=\"5 3\"");
        text(&mut out, (left + right) / 2.0, bottom + 25.0, "middle", "submission");
    }
    out.push_str("</svg>");
    out
}

/// Seed 001 Figure 1: Clean and Residual success (%) per agent, side by side.
pub fn clean_against_residual(rows: &[(String, f64, f64)]) -> String {
    let group_w = 110.0;
    let width = 60.0 + group_w * rows.len().max(1) as f64;
    let height = 230.0;
    let (top, bottom, left) = (30.0, 180.0, 50.0);
    let mut out = open_svg(width, height, "Clean against Residual success per agent");
    legend(&mut out, left, 16.0, &[("Clean", CLEAN, false), ("Residual", RESIDUAL, false)]);
    percent_axis(&mut out, left, width - 10.0, top, bottom, true);
    let y_of = |v: f64| bottom - (bottom - top) * v.clamp(0.0, 1.0);
    for (i, (label, clean, res)) in rows.iter().enumerate() {
        let gx = left + 10.0 + group_w * i as f64;
        rect(&mut out, gx, y_of(*clean), 36.0, bottom - y_of(*clean), CLEAN, &format!("{label} Clean {:.1}", clean * 100.0));
        rect(&mut out, gx + 40.0, y_of(*res), 36.0, bottom - y_of(*res), RESIDUAL, &format!("{label} Residual {:.1}", res * 100.0));
        text(&mut out, gx + 38.0, bottom + 14.0, "middle", label);
        text(&mut out, gx + 38.0, bottom + 28.0, "middle", &format!("gap {:.1}", (clean - res) * 100.0));
    }
    out.push_str("</svg>");
    out
}

/// Axis of a scatter or line chart: label and value range.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// Axis label.
    pub label: String,
    /// Lowest value.
    pub min: f64,
    /// Highest value.
    pub max: f64,
}

struct Frame {
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
}

impl Frame {
    fn x(&self, axis: &Axis, v: f64) -> f64 {
        let span = (axis.max - axis.min).max(f64::EPSILON);
        self.left + (self.right - self.left) * ((v - axis.min) / span).clamp(0.0, 1.0)
    }

    fn y(&self, axis: &Axis, v: f64) -> f64 {
        let span = (axis.max - axis.min).max(f64::EPSILON);
        self.bottom - (self.bottom - self.top) * ((v - axis.min) / span).clamp(0.0, 1.0)
    }

    fn draw_axes(&self, out: &mut String, x: &Axis, y: &Axis) {
        for step in 0..=4 {
            let f = f64::from(step) / 4.0;
            let xv = x.min + (x.max - x.min) * f;
            let yv = y.min + (y.max - y.min) * f;
            let px = self.x(x, xv);
            let py = self.y(y, yv);
            line(out, (px, self.top), (px, self.bottom), GRID, "");
            line(out, (self.left, py), (self.right, py), GRID, "");
            text(out, px, self.bottom + 13.0, "middle", &tick(xv));
            text(out, self.left - 4.0, py + 3.5, "end", &tick(yv));
        }
        text(out, (self.left + self.right) / 2.0, self.bottom + 28.0, "middle", &x.label);
        let _ = write!(
            out,
            "<text x=\"12\" y=\"{:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 12 {:.1})\" fill=\"{INK}\">{}</text>",
            (self.top + self.bottom) / 2.0,
            (self.top + self.bottom) / 2.0,
            escape(&y.label)
        );
    }
}

fn tick(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 { format!("{v:.0}") } else { format!("{v:.2}") }
}

/// A scatter plot, one labelled point per `(label, x, y)`.
pub fn scatter(points: &[(String, f64, f64)], x: &Axis, y: &Axis, title: &str) -> String {
    let (width, height) = (520.0, 320.0);
    let frame = Frame { left: 50.0, right: width - 140.0, top: 30.0, bottom: height - 45.0 };
    let mut out = open_svg(width, height, title);
    frame.draw_axes(&mut out, x, y);
    for (i, (label, xv, yv)) in points.iter().enumerate() {
        let (px, py) = (frame.x(x, *xv), frame.y(y, *yv));
        let color = PALETTE[i % PALETTE.len()];
        let _ = write!(
            out,
            "<circle cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"4.5\" fill=\"{color}\"><title>{}</title></circle>",
            escape(&format!("{label}: {} {}, {} {}", x.label, tick_value(*xv), y.label, tick_value(*yv)))
        );
        text(&mut out, px + 6.0, py - 6.0, "start", label);
    }
    out.push_str("</svg>");
    out
}

fn tick_value(v: f64) -> String {
    format!("{v:.3}")
}

/// Line chart of several series of `(x, y)` points; the series named in `emphasis` is drawn
/// thick (the case-macro mean of seed 002 Figure 5e).
pub fn curves(series: &[(String, Vec<(f64, f64)>)], x: &Axis, y: &Axis, emphasis: &str, title: &str) -> String {
    let (width, height) = (520.0, 300.0);
    let frame = Frame { left: 50.0, right: width - 130.0, top: 20.0, bottom: height - 45.0 };
    let mut out = open_svg(width, height, title);
    frame.draw_axes(&mut out, x, y);
    for (i, (name, points)) in series.iter().enumerate() {
        let color = if name == emphasis { INK } else { PALETTE[i % PALETTE.len()] };
        let stroke = if name == emphasis { 3.0 } else { 1.5 };
        let path: Vec<String> = points.iter().map(|(a, b)| format!("{:.1},{:.1}", frame.x(x, *a), frame.y(y, *b))).collect();
        let _ = write!(out, "<polyline points=\"{}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"{stroke}\"/>", path.join(" "));
        for (a, b) in points {
            let _ = write!(
                out,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\" fill=\"{color}\"><title>{}</title></circle>",
                frame.x(x, *a),
                frame.y(y, *b),
                escape(&format!("{name}: {} {}, {} {}", x.label, tick_value(*a), y.label, tick_value(*b)))
            );
        }
        let ly = frame.top + 14.0 * i as f64;
        line(&mut out, (frame.right + 10.0, ly), (frame.right + 24.0, ly), color, &format!("stroke-width=\"{stroke}\""));
        text(&mut out, frame.right + 28.0, ly + 3.5, "start", name);
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_are_closed_svg_with_titles() {
        let panel = SubmissionPanel { label: "agent <x>".into(), partial: [0.2, 0.6, 0.8, 1.0], literal: None, full_at_1: 1.0 };
        let svg = score_across_submissions(&[panel]);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert!(svg.contains("agent &lt;x&gt;"));
        assert!(svg.contains("Partial@2 60.0"));
        let bars = clean_against_residual(&[("a".into(), 0.722, 0.2)]);
        assert!(bars.contains("gap 52.2"));
    }
}
