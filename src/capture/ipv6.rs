//! IPv6 extension headers, one at a time, with checked accessors only:
//! used by the IP decoder and by the ICMPv6 quote reader.

use etherparse::{IpAuthHeaderSlice, IpNumber, Ipv6FragmentHeaderSlice, Ipv6RawExtHeaderSlice};

/// One step of a walk through IPv6 extension headers.
pub(crate) enum Ipv6Extension<'a> {
    /// `next` is not an extension header: the upper layer (or ESP, or no
    /// next header) starts here.
    Upper,
    /// An extension header `len` bytes long (at least 8), followed by `next`.
    Header {
        next: IpNumber,
        len: usize,
        /// The header itself when it is a fragment header that fragments
        /// (not an atomic fragment).
        fragment: Option<Ipv6FragmentHeaderSlice<'a>>,
    },
    /// An extension header cut short or malformed.
    Broken,
}

/// The extension header `next` at the start of `rest`, read with checked
/// accessors only (etherparse's `Ipv6ExtensionSliceIter` reads past a
/// broken header; see `decode::fragment_header`).
pub(crate) fn ipv6_extension(next: IpNumber, rest: &[u8]) -> Ipv6Extension<'_> {
    let (after, len, fragment) = match next {
        IpNumber::IPV6_HEADER_HOP_BY_HOP
        | IpNumber::IPV6_ROUTE_HEADER
        | IpNumber::IPV6_DESTINATION_OPTIONS => match Ipv6RawExtHeaderSlice::from_slice(rest) {
            Ok(header) => (header.next_header(), header.slice().len(), None),
            Err(_) => return Ipv6Extension::Broken,
        },
        IpNumber::AUTHENTICATION_HEADER => match IpAuthHeaderSlice::from_slice(rest) {
            Ok(header) => (header.next_header(), header.slice().len(), None),
            Err(_) => return Ipv6Extension::Broken,
        },
        IpNumber::IPV6_FRAGMENTATION_HEADER => match Ipv6FragmentHeaderSlice::from_slice(rest) {
            Ok(header) => (
                header.next_header(),
                header.slice().len(),
                header.is_fragmenting_payload().then_some(header),
            ),
            Err(_) => return Ipv6Extension::Broken,
        },
        _ => return Ipv6Extension::Upper,
    };
    Ipv6Extension::Header {
        next: after,
        len,
        fragment,
    }
}
