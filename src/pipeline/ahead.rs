//! Game batches opened on worker threads ahead of their turn, the game
//! layer's work done in order all the same.
//!
//! Inflating a Bedrock batch is most of the game layer's cost where the
//! packets are large (a server's chunks), and each batch is its own
//! DEFLATE stream: once a flow's encryption and compression are settled,
//! a batch can be decrypted and inflated anywhere, given the decryption's
//! stream as it stood before it. [`Window`] holds the messages in the
//! order they came; for a batch of a flow that allows it, the game layer
//! moves the flow's stream past the batch at once
//! ([`Game::ahead`](crate::bedrock::Game)) and a worker decrypts and
//! inflates it from a copy of the stream; every message is then handed to
//! the game layer in its turn, in the order they came
//! ([`Game::finish_ahead`](crate::bedrock::Game)), which reads the packets
//! as it would have, and opens the batch again itself when an earlier
//! message changed the flow (a new key, NetworkSettings). So what comes
//! out is the one thread's, byte for byte. A game batch that cannot be
//! opened ahead (its flow's state is not settled: a login, a new key) is
//! read by the game layer at once when no batch of its flow waits before
//! it (a flow's state is its own: the other flows' batches go on opening),
//! else handed on at once, after the messages before it (the reading waits
//! for their batches); either way the flow's later batches are decided on
//! its state after it (were they read on, none of them could go ahead
//! until it was read). At most [`MAX_HELD`] messages or [`MAX_HELD_BYTES`]
//! of them wait, [`MAX_OUT`] of their batches opened ahead, holding at
//! most [`MAX_OPENED_BYTES`] (a batch opened past it is inflated again in
//! its turn).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::bedrock::{Ahead, Game, GameEvent, Opened};
use crate::mirror::Message;

/// Messages waiting at most.
pub(crate) const MAX_HELD: usize = 4096;
/// Bytes of the messages waiting, at most.
pub(crate) const MAX_HELD_BYTES: usize = 16 << 20;
/// Batches out at most: sent to a worker, or opened and waiting. Wide
/// enough that the workers seldom wait for the reading thread to hand them
/// more while it waits for the oldest (on two cores, 48 left them idle a
/// third of the time); narrow enough that what they opened is read again
/// while still in the cache (512 or 1024 took more CPU time for no gain).
pub(crate) const MAX_OUT: usize = 256;
/// Bytes the batches opened and waiting hold (plaintext and packets; each
/// batch at most `flow::AHEAD_MAX` of packets): a batch opened past it
/// lets its packets go, to be inflated again in its turn, so that memory
/// stays flat whatever the batches inflate to. The workers check it
/// without a lock, so each may pass it by one batch, and a batch that
/// lets its packets go still holds its plaintext (no more than its
/// message, which `MAX_HELD_BYTES` bounds).
pub(crate) const MAX_OPENED_BYTES: usize = 32 << 20;

type Job = (u64, Message, Ahead);
type Done = (u64, Message, Ahead, Opened);

/// Batches handed to a worker at once, at most (a handoff between threads
/// costs about what inflating a small batch does, and wakes a thread).
pub(crate) const GROUP: usize = 32;
/// Bytes of a group's batches, at most.
pub(crate) const GROUP_BYTES: usize = 1 << 20;

/// What waits for its turn.
enum Entry {
    /// A message, and where its batch stands.
    Message {
        flow: u32,
        since: Duration,
        file: usize,
        slot: Slot,
    },
    /// A flow that ended after the messages before.
    Close(u32),
}

enum Slot {
    /// Handed to the game layer in its turn, as it is.
    Plain(Message),
    /// Read by the game layer already (no batch of its flow waited).
    Read(Message, Option<Vec<GameEvent>>),
    /// Being opened by a worker.
    Opening,
    /// Opened.
    Opened(Box<Done>),
}

/// Where each message goes in its turn, with what the game layer made of
/// it, its time and its file.
pub(crate) type Each<'a> =
    dyn FnMut(Message, Option<Vec<GameEvent>>, Duration, usize) -> anyhow::Result<()> + 'a;

/// The messages in order, batches opened ahead; see the module.
pub(crate) struct Window {
    queue: VecDeque<Entry>,
    /// The sequence number of the queue's front.
    front: u64,
    bytes: usize,
    /// Batches out: sent to a worker, or opened and waiting.
    out: usize,
    /// The bytes the batches opened and waiting hold (the workers add).
    opened: Arc<AtomicUsize>,
    /// The workers' queue; none without workers (every message handed on
    /// at once).
    jobs: Option<Sender<Vec<Job>>>,
    done: Option<Receiver<Vec<Done>>>,
    /// The batches of the next group, and their bytes.
    group: Vec<Job>,
    group_bytes: usize,
    /// Batches opened ahead so far.
    #[cfg(test)]
    opened_ahead: usize,
    /// Game batches read at once so far, and how many of them while a
    /// batch before them was still out.
    #[cfg(test)]
    read_early: (usize, usize),
}

impl Window {
    /// A window with `workers` threads of `scope` (none: no window).
    pub(crate) fn new<'s>(scope: &'s std::thread::Scope<'s, '_>, workers: usize) -> Window {
        let (mut jobs, mut done) = (None, None);
        let opened = Arc::new(AtomicUsize::new(0));
        if workers > 0 {
            let (tx, rx) = channel::<Vec<Job>>();
            let (done_tx, done_rx) = channel::<Vec<Done>>();
            let rx = Arc::new(Mutex::new(rx));
            for i in 0..workers {
                let (rx, done_tx) = (Arc::clone(&rx), done_tx.clone());
                let held = Arc::clone(&opened);
                let worker = std::thread::Builder::new().name(format!("open-{i}"));
                // A worker that cannot start leaves its share to the others;
                // with none, the first batch waited for is opened here.
                let _ = worker.spawn_scoped(scope, move || loop {
                    let job = match rx.lock() {
                        Ok(r) => r.recv(),
                        Err(_) => return,
                    };
                    let Ok(group) = job else { return };
                    let group = group.into_iter().map(|j| open(j, &held)).collect();
                    if done_tx.send(group).is_err() {
                        return;
                    }
                });
            }
            (jobs, done) = (Some(tx), Some(done_rx));
        }
        Window {
            queue: VecDeque::new(),
            front: 0,
            bytes: 0,
            out: 0,
            opened,
            jobs,
            done,
            group: Vec::new(),
            group_bytes: 0,
            #[cfg(test)]
            opened_ahead: 0,
            #[cfg(test)]
            read_early: (0, 0),
        }
    }

    /// The next message, in delivery order.
    pub(crate) fn message(
        &mut self,
        game: &mut Game,
        m: Message,
        since: Duration,
        file: usize,
        each: &mut Each<'_>,
    ) -> anyhow::Result<()> {
        if self.jobs.is_none() {
            let g = game.message(&m);
            return each(m, g, since, file);
        }
        let ahead = game.ahead(&m);
        self.bytes += m.data.len();
        let flow = m.flow;
        let slot = match ahead {
            Some(a) => {
                #[cfg(test)]
                {
                    self.opened_ahead += 1;
                }
                let seq = self.front + self.queue.len() as u64;
                self.group_bytes += m.data.len();
                self.group.push((seq, m, a));
                self.out += 1;
                Slot::Opening
            }
            // A game batch of a flow with nothing waiting before it is
            // read now: its flow's later batches are decided on the state
            // after it, while the other flows' batches go on opening.
            None if is_game(&m) && !self.holds(flow) && game.reads_early(self.queue.len() + 1) => {
                #[cfg(test)]
                {
                    let behind = self.queue.iter().any(|e| {
                        matches!(
                            e,
                            Entry::Message {
                                slot: Slot::Opening | Slot::Opened(_),
                                ..
                            }
                        )
                    });
                    self.read_early.0 += 1;
                    self.read_early.1 += usize::from(behind);
                }
                let g = game.message(&m);
                Slot::Read(m, g)
            }
            None => Slot::Plain(m),
        };
        self.queue.push_back(Entry::Message {
            flow,
            since,
            file,
            slot,
        });
        // A game batch read in its turn: its flow's state after it decides
        // whether the next ones go ahead (another message leaves the flow
        // as it is).
        let settles = matches!(
            self.queue.back(),
            Some(Entry::Message { slot: Slot::Plain(m), .. }) if is_game(m)
        );
        if settles || self.group.len() >= GROUP || self.group_bytes >= GROUP_BYTES {
            self.send();
        }
        self.hand_on(game, each, settles)?;
        while self.queue.len() > MAX_HELD || self.bytes > MAX_HELD_BYTES || self.out > MAX_OUT {
            if !self.hand_on_one(game, each, true)? {
                break;
            }
        }
        Ok(())
    }

    /// Flow `flow` ended after the messages given so far.
    pub(crate) fn close(&mut self, game: &mut Game, flow: u32) {
        if self.queue.is_empty() {
            drop(game.close(flow));
        } else {
            self.queue.push_back(Entry::Close(flow));
        }
    }

    /// Whether a game batch of flow `flow` waits to be read, or its end
    /// (the game layer reads nothing else).
    pub(crate) fn holds(&self, flow: u32) -> bool {
        self.queue.iter().any(|e| match e {
            Entry::Message {
                flow: f,
                slot: Slot::Plain(m),
                ..
            } => *f == flow && is_game(m),
            Entry::Message {
                slot: Slot::Read(..),
                ..
            } => false,
            Entry::Message { flow: f, .. } | Entry::Close(f) => *f == flow,
        })
    }

    /// Every message waiting, handed on.
    pub(crate) fn flush(&mut self, game: &mut Game, each: &mut Each<'_>) -> anyhow::Result<()> {
        self.hand_on(game, each, true)
    }

    /// The group gathered, to a worker (opened here when none is left).
    fn send(&mut self) {
        self.group_bytes = 0;
        let group = std::mem::take(&mut self.group);
        if group.is_empty() {
            return;
        }
        let Some(jobs) = &self.jobs else { return };
        if let Err(e) = jobs.send(group) {
            let done: Vec<Done> = e.0.into_iter().map(|j| open(j, &self.opened)).collect();
            self.place(done);
        }
    }

    /// Opened batches, each put in its place.
    fn place(&mut self, done: Vec<Done>) {
        for d in done {
            let at = (d.0 - self.front) as usize;
            if let Some(Entry::Message { slot, .. }) = self.queue.get_mut(at) {
                *slot = Slot::Opened(Box::new(d));
            }
        }
    }

    /// The messages at the front whose turn can come (all, with `wait`).
    fn hand_on(&mut self, game: &mut Game, each: &mut Each<'_>, wait: bool) -> anyhow::Result<()> {
        while self.hand_on_one(game, each, wait)? {}
        Ok(())
    }

    /// The front entry handed on, if it is ready (waited for with
    /// `wait`): whether one was.
    fn hand_on_one(
        &mut self,
        game: &mut Game,
        each: &mut Each<'_>,
        wait: bool,
    ) -> anyhow::Result<bool> {
        self.collect(false);
        loop {
            match self.queue.front() {
                None => return Ok(false),
                Some(Entry::Message {
                    slot: Slot::Opening,
                    ..
                }) => {
                    if !wait {
                        return Ok(false);
                    }
                    // What it waits for may still be gathering.
                    self.send();
                    let opening = matches!(
                        self.queue.front(),
                        Some(Entry::Message {
                            slot: Slot::Opening,
                            ..
                        })
                    );
                    if opening && !self.collect(true) {
                        return Ok(false);
                    }
                }
                Some(_) => break,
            }
        }
        let Some(entry) = self.queue.pop_front() else {
            return Ok(false);
        };
        self.front += 1;
        match entry {
            Entry::Close(flow) => drop(game.close(flow)),
            Entry::Message {
                since, file, slot, ..
            } => {
                let (m, g) = match slot {
                    Slot::Plain(m) => {
                        let g = game.message(&m);
                        (m, g)
                    }
                    Slot::Read(m, g) => (m, g),
                    Slot::Opened(done) => {
                        let (_, m, a, o) = *done;
                        self.out -= 1;
                        self.opened.fetch_sub(o.holds(), Ordering::Relaxed);
                        let g = game.finish_ahead(&m, a, o);
                        (m, g)
                    }
                    Slot::Opening => unreachable!("waited for above"),
                };
                self.bytes -= m.data.len();
                each(m, g, since, file)?;
            }
        }
        Ok(true)
    }

    /// The batches the workers opened, each put in its place; with `wait`,
    /// at least one waited for: whether one came.
    fn collect(&mut self, wait: bool) -> bool {
        let Some(done) = &self.done else {
            return false;
        };
        let mut groups = Vec::new();
        let mut next = if wait {
            done.recv().ok()
        } else {
            done.try_recv().ok()
        };
        while let Some(g) = next {
            groups.push(g);
            next = done.try_recv().ok();
        }
        let any = !groups.is_empty();
        for g in groups {
            self.place(g);
        }
        any
    }
}

/// Whether `m` is a game batch (0xFE), which a Bedrock flow's state reads.
fn is_game(m: &Message) -> bool {
    m.data.first() == Some(&crate::bedrock::GAME_MESSAGE)
}

/// A batch opened, on a worker: its packets let go when the batches
/// opened and waiting would hold more than [`MAX_OPENED_BYTES`] with them.
fn open((seq, m, mut a): Job, held: &AtomicUsize) -> Done {
    let mut opened = a.open(m.data.get(1..).unwrap_or_default());
    let mut holds = opened.holds();
    if held.load(Ordering::Relaxed) + holds > MAX_OPENED_BYTES {
        opened.forget_packets();
        holds = opened.holds();
    }
    held.fetch_add(holds, Ordering::Relaxed);
    (seq, m, a, opened)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bedrock::flow::tests::{long_session, long_session_keys};
    use crate::bedrock::Detect;
    use crate::wire::Reliability;

    /// Sessions one after another, as a server's log of players has
    /// them: each one's login is read in its turn behind the last
    /// batches of the one before, still opening, and the rest of each
    /// goes ahead all the same; what comes out is what no window gives.
    #[test]
    fn sessions_one_after_another_go_ahead_after_each_login() {
        let keys = long_session_keys;
        let session = long_session(Some([9; 32]), 40);
        let sessions = 5;
        let messages: Vec<Message> = (0..sessions)
            .flat_map(|flow| {
                session.iter().map(move |(dir, data)| Message {
                    flow,
                    dir: *dir,
                    frame: 0,
                    ts: Duration::ZERO,
                    data: data.clone(),
                    reliability: Reliability::RELIABLE_ORDERED,
                    channel: Some(0),
                    anomalies: Vec::new(),
                })
            })
            .collect();
        // `spent`: the opened batches' budget spent before the first.
        let run = |workers: usize, spent: bool| {
            let mut game = Game::new(Detect::Always, keys());
            let mut shown = Vec::new();
            let mut each = |m: Message, g: Option<Vec<GameEvent>>, _: Duration, _: usize| {
                shown.push(format!("{} {:?}", m.flow, g));
                Ok(())
            };
            let counts = std::thread::scope(|scope| {
                let mut window = Window::new(scope, workers);
                if spent {
                    window.opened.store(MAX_OPENED_BYTES, Ordering::Relaxed);
                }
                for m in &messages {
                    window.message(&mut game, m.clone(), Duration::ZERO, 0, &mut each)?;
                }
                window.flush(&mut game, &mut each)?;
                let held = window.opened.load(Ordering::Relaxed);
                anyhow::Ok((window.opened_ahead, window.read_early, held))
            });
            (counts.unwrap(), shown)
        };
        let ((none, _, _), want) = run(0, false);
        assert_eq!(none, 0);
        let ((opened, (early, behind), held), shown) = run(1, false);
        assert_eq!(shown, want);
        // Each session's 80 batches after its spawn.
        assert_eq!(opened, sessions as usize * 80, "{opened} opened ahead");
        // Every other one read at once, each later session's first ones
        // while the last batches of the one before were still out (the
        // group being gathered is not sent for them).
        assert_eq!(opened + early, messages.len());
        assert!(
            behind >= sessions as usize - 1,
            "{behind} read behind batches out"
        );
        // What the opened batches held is given back as each is read.
        assert_eq!(held, 0);
        // With the budget spent, every batch opened ahead lets its packets
        // go and is inflated again in its turn: the same output.
        let ((opened, _, held), shown) = run(1, true);
        assert_eq!(shown, want);
        assert_eq!(opened, sessions as usize * 80);
        assert_eq!(held, MAX_OPENED_BYTES);
    }
}
