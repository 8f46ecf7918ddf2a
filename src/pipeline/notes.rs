//! What a capture run tells the person running it besides its records:
//! files it could not read, what it read and skipped, why it found nothing,
//! a mistake in what it was asked. The library hands each note to a
//! [`Notes`] sink and never prints; the binary prints them on standard
//! error (the summary on a terminal only).

use std::sync::Arc;

/// What a note is about, for the sink to decide where it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoteKind {
    /// A file that cannot be read, or was cut short.
    Problem,
    /// What was read and what was skipped (frames, packets, flows).
    Summary,
    /// Nothing to show, and what to try.
    Hint,
    /// A mistake in what the run was asked (no file, a `--flow` it lacks).
    Usage,
    /// A file of a `--separate` run that failed, with its error.
    Failed,
}

/// What a run's notes are handed to.
type Sink = Arc<dyn Fn(NoteKind, &str) + Send + Sync>;

/// Where a run's notes go; by default nowhere.
#[derive(Clone, Default)]
pub struct Notes(Option<Sink>);

impl Notes {
    /// Notes handed to `sink`.
    pub fn new(sink: impl Fn(NoteKind, &str) + Send + Sync + 'static) -> Notes {
        Notes(Some(Arc::new(sink)))
    }

    /// Hand `line` to the sink.
    pub(crate) fn say(&self, kind: NoteKind, line: &str) {
        if let Some(sink) = &self.0 {
            sink(kind, line);
        }
    }

    /// [`Notes::say`], once in a process for the same line: the runs of
    /// one command over the same files (`export`'s tables) say a file's
    /// problem once.
    pub(crate) fn say_once(&self, kind: NoteKind, line: &str) {
        use std::collections::HashSet;
        use std::sync::{Mutex, OnceLock};
        static SAID: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
        let mut said = SAID
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        // Bounded: a fleet's lines past this many are all said.
        if said.len() < 4096 && !said.insert(line.to_string()) {
            return;
        }
        drop(said);
        self.say(kind, line);
    }
}

impl std::fmt::Debug for Notes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Notes(sink)"
        } else {
            "Notes(none)"
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn notes_reach_the_sink_and_say_once_says_a_line_once() {
        let got = Arc::new(Mutex::new(Vec::new()));
        let g = Arc::clone(&got);
        let notes = Notes::new(move |k, l| g.lock().unwrap().push((k, l.to_string())));
        notes.say(NoteKind::Summary, "read");
        notes.say_once(NoteKind::Problem, "a unique line of this test");
        notes.say_once(NoteKind::Problem, "a unique line of this test");
        assert_eq!(got.lock().unwrap().len(), 2);
        Notes::default().say(NoteKind::Hint, "nowhere");
    }
}
