//! A packet together with the datagram it borrows from, so that it can go
//! to another thread (the formatting workers of [`crate::pipeline::ordered`]).

use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use super::{Anomaly, Dissector, Packet};
use crate::capture::UdpDatagram;

/// A dissected packet that owns its datagram: one pointer wide, so that
/// moving it through the pipeline's channels copies nothing.
pub struct OwnedPacket(NonNull<Inner>);

struct Inner {
    /// Borrows from `datagram` (its payload); `None` in a [`Shell`].
    packet: Option<Packet<'static>>,
    /// `None` in a [`Shell`].
    datagram: Option<UdpDatagram>,
}

/// The allocation of an [`OwnedPacket`] done with, for the next one.
pub struct Shell(Box<Inner>);

// SAFETY: the `Inner` is owned (nothing else points to it), and
// `UdpDatagram` and `Packet` are `Send`: moving it to another thread is
// moving owned data.
unsafe impl Send for OwnedPacket {}

impl OwnedPacket {
    /// `d` through `dissector`, in one of `shells` if there is one; `d`
    /// back when it is not a RakNet packet.
    // The datagram comes back by value, to be recycled: boxing it would
    // allocate for every datagram that is not RakNet.
    #[allow(clippy::result_large_err)]
    pub fn dissect(
        dissector: &mut Dissector,
        d: UdpDatagram,
        shells: &mut Vec<Shell>,
    ) -> Result<OwnedPacket, UdpDatagram> {
        let mut boxed = shells.pop().map_or_else(
            || {
                Box::new(Inner {
                    packet: None,
                    datagram: None,
                })
            },
            |s| s.0,
        );
        boxed.datagram = Some(d);
        let raw = Box::into_raw(boxed);
        // SAFETY: `raw` is valid until it is freed or made a shell again
        // (`drop`, `recycle`), and `datagram` is not written while the
        // packet lives.
        let datagram = unsafe { (*raw).datagram.as_ref() }.expect("just set");
        match dissector.dissect(datagram) {
            Some(p) => {
                // SAFETY: the lifetime the packet borrows the datagram for
                // is made 'static here and cut back to `&self`'s by `get`;
                // the datagram outlives the packet (`Inner` drops the packet
                // first, and `recycle` takes it out first) and does not move
                // (it is on the heap, behind a raw pointer). The write is to
                // the other field.
                unsafe {
                    (*raw).packet = Some(std::mem::transmute::<Packet<'_>, Packet<'static>>(p));
                    Ok(OwnedPacket(NonNull::new_unchecked(raw)))
                }
            }
            None => {
                // SAFETY: from `Box::into_raw` above; nothing borrows it now.
                let mut boxed = unsafe { Box::from_raw(raw) };
                let d = boxed.datagram.take().expect("just set");
                shells.push(Shell(boxed));
                Err(d)
            }
        }
    }

    fn inner(&self) -> &Inner {
        // SAFETY: valid while `self` lives.
        unsafe { self.0.as_ref() }
    }

    /// The packet, borrowing from `self`.
    pub fn get(&self) -> &Packet<'_> {
        self.inner().packet.as_ref().expect("made with a packet")
    }

    /// Done with: the packet's lists go back to `dissector`, and the
    /// datagram (for its reader to reuse the payload's buffer) and the
    /// allocation (for the next packet) are handed back.
    pub fn recycle(self, dissector: &mut Dissector) -> (UdpDatagram, Shell) {
        let this = ManuallyDrop::new(self);
        // SAFETY: from `Box::into_raw`, taken back once (`this` is never
        // dropped).
        let mut inner = unsafe { Box::from_raw(this.0.as_ptr()) };
        // The packet first: the dissector keeps its lists, emptied.
        if let Some(p) = inner.packet.take() {
            dissector.recycle(p);
        }
        let d = inner
            .datagram
            .take()
            .expect("an owned packet has its datagram");
        (d, Shell(inner))
    }

    /// The packet's anomalies, to merge the mirror's findings into.
    pub fn anomalies_mut(&mut self) -> &mut Vec<Anomaly> {
        // SAFETY: valid while `self` lives, and `&mut self` is the only access.
        let inner = unsafe { self.0.as_mut() };
        &mut inner.packet.as_mut().expect("made with a packet").anomalies
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
    pub fn give(&self, p: OwnedPacket) {
        if let Ok(mut v) = self.0.lock() {
            v.push(p);
        }
    }

    /// Everything given so far.
    pub fn take(&self) -> Vec<OwnedPacket> {
        self.0
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default()
    }
}

impl Drop for OwnedPacket {
    fn drop(&mut self) {
        // SAFETY: from `Box::into_raw`, freed once; `Inner`'s fields drop
        // in order, the packet before the datagram it borrows from.
        drop(unsafe { Box::from_raw(self.0.as_ptr()) });
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
        // The shell holds the next packet.
        shells.push(shell);
        let again = OwnedPacket::dissect(&mut dissector, d, &mut shells).unwrap();
        assert!(shells.is_empty());
        assert_eq!(again.get().payload, &d2().payload[..]);
        let other = udp("10.0.0.1:1", "10.0.0.2:2", b"hello".to_vec());
        assert!(OwnedPacket::dissect(&mut dissector, other, &mut shells).is_err());
        assert_eq!(shells.len(), 1, "the allocation kept");
    }
}
