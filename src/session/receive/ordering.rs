//! The ordering channels' state: the messages waiting in each channel's
//! heap, released in the order of the original's `DataStructures::Heap`.

use super::{Message, HELD_ENTRY_OVERHEAD};

/// A message waiting in an ordering heap.
#[derive(Debug)]
pub(super) struct Held {
    pub(super) weight: u64,
    /// The datagram that brought it, for the report at `finish`.
    pub(super) frame: u64,
    pub(super) msg: Message,
}

impl Held {
    pub(super) fn cost(&self) -> usize {
        self.msg.data.len() + HELD_ENTRY_OVERHEAD
    }
}

/// A binary min-heap with the sift rules of the original's
/// `DataStructures::Heap<.., false>`, so that messages of equal weight
/// come out in the same order as there.
#[derive(Debug, Default)]
pub(super) struct OrderingHeap {
    pub(super) nodes: Vec<Held>,
}

impl OrderingHeap {
    pub(super) fn push(&mut self, h: Held) {
        self.nodes.push(h);
        let mut i = self.nodes.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.nodes[parent].weight > self.nodes[i].weight {
                self.nodes.swap(parent, i);
                i = parent;
            } else {
                break;
            }
        }
    }

    pub(super) fn peek(&self) -> Option<&Held> {
        self.nodes.first()
    }

    pub(super) fn pop(&mut self) -> Option<Held> {
        if self.nodes.is_empty() {
            return None;
        }
        let top = self.nodes.swap_remove(0);
        let n = self.nodes.len();
        let mut i = 0;
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            if l >= n {
                break;
            }
            let w = self.nodes[i].weight;
            if r >= n {
                if w > self.nodes[l].weight {
                    self.nodes.swap(l, i);
                }
                break;
            }
            let (wl, wr) = (self.nodes[l].weight, self.nodes[r].weight);
            if wl >= w && wr >= w {
                break;
            }
            let child = if wl < wr { l } else { r };
            self.nodes.swap(child, i);
            i = child;
        }
        Some(top)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

/// One ordering channel's read state.
#[derive(Debug, Default)]
pub(super) struct Channel {
    /// False until the first message when joining mid-stream.
    pub(super) synced: bool,
    /// `orderedReadIndex`.
    pub(super) read_index: u32,
    /// `highestSequencedReadIndex`.
    pub(super) highest_sequenced: u32,
    /// `heapIndexOffsets`: weights are relative to it.
    pub(super) heap_offset: u32,
    pub(super) heap: OrderingHeap,
}
