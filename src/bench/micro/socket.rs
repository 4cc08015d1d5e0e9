//! Socket benchmarks: AF_UNIX socketpairs (stream and datagram) and TCP
//! over loopback, bandwidth and ping-pong latency (lmbench bw_unix,
//! lat_unix, bw_tcp, lat_tcp).

use anyhow::Context;
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::{UnixDatagram, UnixStream};

use super::micro;
use super::party::{Ends, Flow, FlowSpec, PingPong, ReadMode, WriteMode, placement_param};
use crate::bench::{Instance, ParamDef, ParamType, Params, RunSettings};
use crate::units::fmt_size;

const CHUNK: ParamDef = ParamDef {
    name: "chunk",
    ty: ParamType::Size {
        min: 1,
        max: 1 << 30,
    },
    default: Some("64k"),
    help: "bytes per send and per receive (one datagram for dgram)",
};
const TCP_CHUNK: ParamDef = ParamDef {
    name: "chunk",
    ty: ParamType::Size {
        min: 1,
        max: 1 << 30,
    },
    default: Some("64k"),
    help: "bytes per send and per receive",
};
const TOTAL: ParamDef = ParamDef {
    name: "total",
    ty: ParamType::Size {
        min: 1,
        max: 1 << 40,
    },
    default: None,
    help: "bytes per sample (absent: calibrated to the sample time)",
};
const TYPE: ParamDef = ParamDef {
    name: "type",
    ty: ParamType::Choice(&["stream", "dgram"]),
    default: Some("stream"),
    help: "SOCK_STREAM or SOCK_DGRAM socketpair",
};
const SIZE: ParamDef = ParamDef {
    name: "size",
    ty: ParamType::Size {
        min: 1,
        max: 1 << 20,
    },
    default: Some("1"),
    help: "bytes per message",
};

/// The largest datagram kbench sends over a unix socketpair: the default
/// send buffer (net.core.wmem_default, 208k) must hold it with its
/// overhead, so 64k is safe everywhere.
const MAX_DGRAM: i64 = 64 << 10;

fn check_common(p: &Params, size_param: &str) -> Result<(), String> {
    if p.opt_str("type") == Some("dgram") && p.int(size_param) > MAX_DGRAM {
        return Err(format!(
            "{size_param} {} is too large for a datagram (at most {})",
            fmt_size(p.int(size_param) as u64),
            fmt_size(MAX_DGRAM as u64)
        ));
    }
    if let Some(t) = p.opt_int("total")
        && t < p.int(size_param)
    {
        return Err(format!(
            "total {} is smaller than {size_param} {}",
            fmt_size(t as u64),
            fmt_size(p.int(size_param) as u64)
        ));
    }
    Ok(())
}

/// A connected pair of sockets: unix stream, unix dgram or loopback TCP.
fn socket_pair(kind: &str) -> anyhow::Result<(OwnedFd, OwnedFd)> {
    Ok(match kind {
        "stream" => {
            let (a, b) = UnixStream::pair().context("socketpair(AF_UNIX, SOCK_STREAM)")?;
            (a.into(), b.into())
        }
        "dgram" => {
            let (a, b) = UnixDatagram::pair().context("socketpair(AF_UNIX, SOCK_DGRAM)")?;
            (a.into(), b.into())
        }
        _ => {
            let l = TcpListener::bind("127.0.0.1:0").context("listening on 127.0.0.1")?;
            let a = TcpStream::connect(l.local_addr()?).context("connecting to 127.0.0.1")?;
            let (b, _) = l.accept().context("accepting on 127.0.0.1")?;
            a.set_nodelay(true)?;
            b.set_nodelay(true)?;
            (a.into(), b.into())
        }
    })
}

fn flow(kind: &str, p: &Params, s: &RunSettings) -> anyhow::Result<Box<dyn Instance>> {
    let (a, b) = socket_pair(kind)?;
    let chunk = p.int("chunk") as usize;
    let spec = FlowSpec {
        write_size: chunk,
        read_size: chunk,
        write_mode: WriteMode::Write,
        read_mode: ReadMode::Read,
        total: p.opt_int("total").map(|t| t as u64),
        placement: p.str("placement").to_string(),
        sample_time: s.sample_time,
    };
    let mut f = Flow::start(spec, vec![(a, b)])?;
    f.extra_notes.push((
        "socket".into(),
        if kind == "tcp" {
            "tcp 127.0.0.1, TCP_NODELAY"
        } else {
            kind
        }
        .into(),
    ));
    Ok(Box::new(f))
}

fn pingpong(kind: &str, p: &Params, s: &RunSettings) -> anyhow::Result<Box<dyn Instance>> {
    let (a, b) = socket_pair(kind)?;
    let me = Ends {
        wr: a.as_raw_fd(),
        rd: a.as_raw_fd(),
        owned: vec![a],
    };
    let child = Ends {
        wr: b.as_raw_fd(),
        rd: b.as_raw_fd(),
        owned: vec![b],
    };
    Ok(Box::new(PingPong::start(
        p.str("placement"),
        p.int("size") as usize,
        me,
        child,
        kind != "dgram",
        1.0,
        s.sample_time,
    )?))
}

pub struct UnixBw;
const UNIX_BW_PARAMS: &[ParamDef] = &[CHUNK, TYPE, TOTAL, placement_param("cross")];

micro! {
    UnixBw, "unix-bw",
    "lmbench bw_unix: a writer process write()s `chunk` bytes at a time into an AF_UNIX socketpair and a reader process read()s them: each write allocates skbs, copies the data in and queues them on the peer's receive queue (unix_stream_sendmsg), each read copies out and frees them; the writer blocks when its send buffer is full. dgram sends one datagram per chunk. Bytes/s. Default placement cross (writer and reader on different allowed CPUs). Counters are per operation: one `chunk`-byte write",
    params = UNIX_BW_PARAMS,
    metrics = super::BYTES_PER_S;
    fn check(&self, p: &Params) -> Result<(), String> {
        check_common(p, "chunk")
    }
    fn instantiate(&self, p: &Params, s: &RunSettings) -> anyhow::Result<Box<dyn Instance>> {
        flow(p.str("type"), p, s)
    }
}

pub struct UnixLat;
const UNIX_LAT_PARAMS: &[ParamDef] = &[SIZE, TYPE, placement_param("cross")];

micro! {
    UnixLat, "unix-lat",
    "lmbench lat_unix: kbench and a child bounce a `size`-byte message over an AF_UNIX socketpair; each send queues an skb on the peer and wakes it, each receive blocks until woken. ns per round trip. Default placement cross (two different allowed CPUs); same gives the one-CPU switch cost",
    params = UNIX_LAT_PARAMS,
    metrics = super::ROUND_TRIP;
    fn check(&self, p: &Params) -> Result<(), String> {
        check_common(p, "size")
    }
    fn instantiate(&self, p: &Params, s: &RunSettings) -> anyhow::Result<Box<dyn Instance>> {
        pingpong(p.str("type"), p, s)
    }
}

pub struct TcpBw;
const TCP_BW_PARAMS: &[ParamDef] = &[TCP_CHUNK, TOTAL, placement_param("cross")];

micro! {
    TcpBw, "tcp-bw",
    "lmbench bw_tcp over loopback: a writer process sends `chunk`-byte writes on a TCP connection to 127.0.0.1 and a reader process reads them: the full TCP/IP stack on both sides of one machine (segmentation, delivery through the loopback device's softirq, ACKs, window updates) plus one copy in and one out. Bytes/s. Default placement cross (sender and receiver on different allowed CPUs). Counters are per operation: one `chunk`-byte write",
    params = TCP_BW_PARAMS,
    metrics = super::BYTES_PER_S;
    fn check(&self, p: &Params) -> Result<(), String> {
        check_common(p, "chunk")
    }
    fn instantiate(&self, p: &Params, s: &RunSettings) -> anyhow::Result<Box<dyn Instance>> {
        flow("tcp", p, s)
    }
}

pub struct TcpLat;
const TCP_LAT_PARAMS: &[ParamDef] = &[SIZE, placement_param("cross")];

micro! {
    TcpLat, "tcp-lat",
    "lmbench lat_tcp over loopback: kbench and a child bounce a `size`-byte message on a TCP_NODELAY connection to 127.0.0.1; each send goes down the TCP/IP stack, through the loopback device's softirq and up to the peer's socket, waking it. ns per round trip. Default placement cross (two different allowed CPUs)",
    params = TCP_LAT_PARAMS,
    metrics = super::ROUND_TRIP;
    fn check(&self, p: &Params) -> Result<(), String> {
        check_common(p, "size")
    }
    fn instantiate(&self, p: &Params, s: &RunSettings) -> anyhow::Result<Box<dyn Instance>> {
        pingpong("tcp", p, s)
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testing::{median, params, run, serial};
    use super::*;
    use crate::bench::Bench;

    #[test]
    fn socket_bandwidths_are_sane() {
        let _g = serial();
        for (b, given) in [
            (&UnixBw as &dyn Bench, vec![("placement", "none")]),
            (
                &UnixBw,
                vec![("type", "dgram"), ("chunk", "8k"), ("placement", "none")],
            ),
            (&TcpBw, vec![("placement", "none")]),
        ] {
            let (v, _) = run(b, &given, 2);
            assert!(
                v.iter().all(|&x| x > 1e6 && x < 1e12),
                "{} {given:?}: {v:?}",
                b.name()
            );
        }
    }

    #[test]
    fn socket_latencies_are_sane() {
        let _g = serial();
        for (b, given) in [
            (&UnixLat as &dyn Bench, vec![("placement", "same")]),
            (&UnixLat, vec![("type", "dgram"), ("placement", "same")]),
            (&TcpLat, vec![("placement", "same"), ("size", "64")]),
        ] {
            let (v, _) = run(b, &given, 2);
            let m = median(&v);
            assert!(m > 200.0 && m < 1e7, "{} {given:?}: {m} ns", b.name());
        }
    }

    #[test]
    fn oversized_datagrams_are_refused() {
        let e = params(&UnixBw, &[("type", "dgram"), ("chunk", "1m")]).unwrap_err();
        assert!(e.contains("too large for a datagram"), "{e}");
        params(&UnixBw, &[("chunk", "1m")]).unwrap();
        let e = params(&TcpLat, &[("type", "dgram")]).unwrap_err();
        assert!(e.contains("unknown parameter `type`"), "{e}");
    }
}
