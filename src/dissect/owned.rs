//! A packet together with the datagram it borrows from, so that it can go
//! to another thread (the formatting workers of [`crate::pipeline::ordered`]).

use std::sync::{Arc, Mutex};

use self_cell::self_cell;

use super::{Anomaly, Dissector, Packet};
use crate::capture::UdpDatagram;

/// The packet of a [`Cell`]: `None` only once [`OwnedPacket::recycle`] took
/// it back for the dissector.
type Held<'a> = Option<Packet<'a>>;

self_cell!(
    /// The datagram and the packet that borrows its payload, in one heap
    /// allocation that does not move.
    struct Cell {
        owner: UdpDatagram,

        #[covariant]
        dependent: Held,
    }
);

/// A dissected packet that owns its datagram: one pointer wide, so that
/// moving it through the pipeline's channels copies nothing.
pub struct OwnedPacket(Cell);

/// What [`OwnedPacket::recycle`] hands back besides the datagram: nothing
/// to reuse since the packet's allocation is `self_cell`'s (one per
/// packet, freed on the reading thread); the pipeline still keeps them.
pub(crate) struct Shell;

impl OwnedPacket {
    /// `d` through `dissector`; `d` back when it is not a RakNet packet.
    // The datagram comes back by value, to be recycled: boxing it would
    // allocate for every datagram that is not RakNet.
    #[allow(clippy::result_large_err)]
    pub(crate) fn dissect(
        dissector: &mut Dissector,
        d: UdpDatagram,
        _shells: &mut Vec<Shell>,
    ) -> Result<OwnedPacket, UdpDatagram> {
        Cell::try_new_or_recover(d, |d| dissector.dissect(d).map(Some).ok_or(()))
            .map(OwnedPacket)
            .map_err(|(d, ())| d)
    }

    /// The packet, borrowing from `self`.
    pub(crate) fn get(&self) -> &Packet<'_> {
        self.0
            .borrow_dependent()
            .as_ref()
            .expect("made with a packet")
    }

    /// Done with: the packet's lists go back to `dissector`, and the
    /// datagram is handed back (for its reader to reuse the payload's
    /// buffer).
    pub(crate) fn recycle(mut self, dissector: &mut Dissector) -> (UdpDatagram, Shell) {
        // The packet first: the dissector keeps its lists, emptied.
        self.0.with_dependent_mut(|_, p| {
            if let Some(p) = p.take() {
                dissector.recycle(p);
            }
        });
        (self.0.into_owner(), Shell)
    }

    /// The packet's anomalies, to merge the mirror's findings into.
    pub(crate) fn anomalies_mut(&mut self) -> &mut Vec<Anomaly> {
        self.0
            .with_dependent_mut(|_, p| &mut p.as_mut().expect("made with a packet").anomalies)
    }
}

/// Packets printed on other threads, on their way back to the pipeline
/// that read them (see [`OwnedPacket::recycle`]): handing their buffers
/// back saves an allocation per datagram, and frees on the reading threads.
#[derive(Clone, Default)]
pub struct SpentPackets(Arc<Mutex<Vec<OwnedPacket>>>);

impl std::fmt::Debug for SpentPackets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SpentPackets")
    }
}

impl SpentPackets {
    pub(crate) fn give(&self, p: OwnedPacket) {
        if let Ok(mut v) = self.0.lock() {
            v.push(p);
        }
    }

    /// Everything given so far.
    pub(crate) fn take(&self) -> Vec<OwnedPacket> {
        self.0
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dissect::Options;

    fn udp(src: &str, dst: &str, payload: Vec<u8>) -> UdpDatagram {
        UdpDatagram {
            frame: 1,
            ts: std::time::Duration::from_secs(1),
            src: src.parse().unwrap(),
            dst: dst.parse().unwrap(),
            udp_len: payload.len(),
            payload,
            icmp: None,
            tcp: None,
        }
    }

    #[test]
    fn an_owned_packet_reads_the_same_on_another_thread() {
        let mut req = Vec::new();
        crate::wire::Offline::OpenConnectionRequest1 {
            protocol: 6,
            mtu: 1492,
        }
        .emit(&mut req);
        let d = udp("127.0.0.1:50000", "127.0.0.1:19132", req);
        // A data datagram of that flow (a message, reliable).
        let d2 = || {
            let p = vec![0x84, 0, 0, 0, 0x40, 0x00, 0x08, 0, 0, 0, 0x86];
            udp("127.0.0.1:19132", "127.0.0.1:50000", p)
        };
        let mut dissector = Dissector::new(Options::default());
        let want = format!("{:?}", dissector.dissect(&d).map(|p| p.body));
        let mut dissector = Dissector::new(Options::default());
        let mut shells = Vec::new();
        let owned = OwnedPacket::dissect(&mut dissector, d, &mut shells).expect("RakNet");
        let got = std::thread::spawn(move || format!("{:?}", Some(&owned.get().body)))
            .join()
            .unwrap();
        assert!(got.contains("OpenConnectionRequest1"), "{got}");
        assert_eq!(got, want);
        let spent = SpentPackets::default();
        spent.give(OwnedPacket::dissect(&mut dissector, d2(), &mut shells).unwrap());
        let back = spent.take();
        assert_eq!(back.len(), 1);
        let (d, shell) = back.into_iter().next().unwrap().recycle(&mut dissector);
        assert_eq!(d.payload, d2().payload);
        shells.push(shell);
        let mut again = OwnedPacket::dissect(&mut dissector, d, &mut shells).unwrap();
        assert_eq!(again.get().payload, &d2().payload[..]);
        again.anomalies_mut().push(Anomaly {
            kind: "duplicate",
            detail: "merged".into(),
        });
        assert_eq!(again.get().anomalies.len(), 1);
        let other = udp("10.0.0.1:1", "10.0.0.2:2", b"hello".to_vec());
        let back = OwnedPacket::dissect(&mut dissector, other, &mut shells);
        assert_eq!(back.err().map(|d| d.payload), Some(b"hello".to_vec()));
    }
}
