//! `kbench status`: a campaign's progress against the running system,
//! as text (the other formats by the [`Render`] fallbacks).

use std::fmt::Write;

use super::fmt::written;
use super::render::Render;
use crate::campaign::{CellState, Status};

fn status_cells(o: &mut String, indent: &str, cells: &[&CellState]) {
    for c in cells {
        let boots = c
            .boots
            .map(|(b, w)| format!(", {b}/{w} boots"))
            .unwrap_or_default();
        let _ = writeln!(
            o,
            "{indent}{} ({}/{} samples{boots})",
            c.label, c.best, c.want
        );
    }
}

fn status(o: &mut String, st: &Status) {
    let arg = &st.plan_arg;
    match (&st.campaign, &st.edited_since) {
        (Some(c), _) => {
            let _ = writeln!(
                o,
                "campaign {} `{}` (plan hash {}), {} run(s)",
                c.id,
                c.name,
                c.hash_label(),
                st.runs
            );
        }
        (None, Some(old)) => {
            let _ = writeln!(
                o,
                "plan `{}` changed since campaign {} started (plan hash {}): `kbench run {arg}` refuses it until the edit is undone, or starts a new campaign with --force",
                st.plan,
                old.id,
                old.hash_label()
            );
        }
        (None, None) => {
            let _ = writeln!(
                o,
                "campaign `{}`: not started (`kbench run {arg}` starts it)",
                st.plan
            );
        }
    }
    if !st.readings.is_empty() {
        let now: Vec<String> = st
            .readings
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let _ = writeln!(o, "system now: {}", now.join(", "));
    }
    let done: Vec<&CellState> = st.cells.iter().filter(|c| c.done()).collect();
    let now: Vec<&CellState> = st
        .cells
        .iter()
        .filter(|c| !c.done() && c.runnable)
        .collect();
    let later: Vec<&CellState> = st
        .cells
        .iter()
        .filter(|c| !c.done() && !c.runnable)
        .collect();
    let _ = writeln!(
        o,
        "{} cells: {} done, {} to run now, {} pending another system state",
        st.cells.len(),
        done.len(),
        now.len(),
        later.len()
    );
    if !done.is_empty() {
        let _ = writeln!(o, "\ndone:");
        status_cells(o, "  ", &done);
    }
    if !now.is_empty() {
        let _ = writeln!(o, "\nto run now (`kbench run {arg}`):");
        status_cells(o, "  ", &now);
    }
    if later.is_empty() {
        return;
    }
    let _ = writeln!(o, "\npending, by the system state they need:");
    let mut groups: Vec<(&[String], Vec<&CellState>)> = Vec::new();
    for c in &later {
        match groups.iter_mut().find(|(k, _)| *k == c.needs.as_slice()) {
            Some((_, v)) => v.push(c),
            None => groups.push((&c.needs, vec![c])),
        }
    }
    for (needs, cells) in groups {
        let _ = writeln!(o, "  needs {}", needs.join("; "));
        let _ = writeln!(o, "    now: {}", cells[0].unmet.join(", "));
        status_cells(o, "    ", &cells);
    }
    match &st.reboot {
        Some(r) => {
            let _ = writeln!(o, "\nto arm the next boot: {r}");
        }
        None => {
            let _ = writeln!(
                o,
                "\n(no [reboot] command in the plan: change the boot options by hand)"
            );
        }
    }
    let _ = writeln!(
        o,
        "after the reboot, `kbench run {arg}` resumes; `kbench status {arg} --resume-unit` prints a unit that does it at boot"
    );
}

impl Render for Status {
    const KIND: &'static str = "status";

    fn text(&self) -> String {
        written(|o| status(o, self))
    }
}
