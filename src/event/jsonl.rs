//! The event stream as JSON lines: a [`Writer`] sink (`kbench run --events
//! jsonl`) and a [`Reader`] (`kbench ingest`, the fleet coordinator). The
//! format is documented in the parent module.

use std::io::{BufRead, Write};

use super::{Event, SCHEMA, Sink};
use crate::error::bad_input;

/// Writes each event as one line and flushes it, so a reader at the other
/// end of a pipe or an SSH connection has it at once.
pub struct Writer<W: Write> {
    out: W,
}

impl<W: Write> Writer<W> {
    pub fn new(out: W) -> Writer<W> {
        Writer { out }
    }
}

impl<W: Write> Sink for Writer<W> {
    /// The event [redacted](Event::redacted): the stream leaves kbench.
    fn event(&mut self, e: &Event) -> anyhow::Result<()> {
        serde_json::to_writer(&mut self.out, &*e.redacted())?;
        self.out.write_all(b"\n")?;
        self.out.flush()?;
        Ok(())
    }
}

/// Events read on a thread of their own, each sent as it is read (at most
/// 1024 waiting): the consumer can wait for the next one with a timeout
/// and act while the stream pauses (commit a batch). The channel closes
/// at the end of the input, after an error, or when the receiver goes.
pub fn read_on_thread<R: BufRead + Send + 'static>(
    input: R,
    name: String,
) -> (
    std::sync::mpsc::Receiver<anyhow::Result<Event>>,
    std::thread::JoinHandle<()>,
) {
    let (tx, rx) = std::sync::mpsc::sync_channel(1024);
    let reading = std::thread::spawn(move || {
        let mut reader = Reader::new(input, &name);
        loop {
            let next = match reader.next_event() {
                Ok(Some(e)) => Ok(e),
                Ok(None) => break,
                Err(e) => Err(e),
            };
            let stop = next.is_err();
            if tx.send(next).is_err() || stop {
                break;
            }
        }
    });
    (rx, reading)
}

/// Longest line a reader accepts: a run's first event carries the plan
/// text and the fingerprint, far below this; anything longer is not an
/// event stream (e.g. `/dev/zero`).
pub const MAX_LINE: usize = 16 << 20;

/// Reads events line by line, with `name:line` in every error. Blank lines
/// are skipped.
pub struct Reader<R: BufRead> {
    input: R,
    name: String,
    line: usize,
    buf: Vec<u8>,
}

impl<R: BufRead> Reader<R> {
    pub fn new(input: R, name: &str) -> Reader<R> {
        Reader {
            input,
            name: name.to_string(),
            line: 0,
            buf: Vec::new(),
        }
    }

    /// The line number of the event last returned.
    pub fn line(&self) -> usize {
        self.line
    }

    /// The next event, `None` at the end of the input. Errors are bad input
    /// (exit 2) naming the line.
    pub fn next_event(&mut self) -> anyhow::Result<Option<Event>> {
        loop {
            self.buf.clear();
            let n = std::io::Read::take(&mut self.input, MAX_LINE as u64 + 1)
                .read_until(b'\n', &mut self.buf)
                .map_err(|e| bad_input!("{}: cannot read: {e}", self.name))?;
            if n == 0 {
                return Ok(None);
            }
            self.line += 1;
            if self.buf.len() > MAX_LINE {
                return Err(bad_input!(
                    "{}:{}: line longer than {} MiB: not a kbench event stream",
                    self.name,
                    self.line,
                    MAX_LINE >> 20
                ));
            }
            let text = String::from_utf8_lossy(&self.buf);
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            let ev: Event = serde_json::from_str(text)
                .map_err(|e| bad_input!("{}:{}: not a kbench event: {e}", self.name, self.line))?;
            if let Event::RunBegun(b) = &ev
                && b.schema > SCHEMA
            {
                return Err(bad_input!(
                    "{}:{}: event schema {} is newer than this kbench reads ({SCHEMA}); upgrade kbench",
                    self.name,
                    self.line,
                    b.schema
                ));
            }
            return Ok(Some(ev));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{RunEnded, SampleEvent};
    use crate::record::RunStatus;

    #[test]
    fn events_round_trip_as_lines() {
        let evs = vec![
            Event::Sample(SampleEvent {
                run: "r".into(),
                cell: "getppid".into(),
                round: 3,
                t: 1.5,
                values: vec![("ns/op".to_string(), 197.25)],
                process: None,
            }),
            Event::RunEnded(RunEnded {
                run: "r".into(),
                ended: 2.0,
                status: RunStatus::Done,
            }),
        ];
        let mut buf = Vec::new();
        let mut w = Writer::new(&mut buf);
        for e in &evs {
            w.event(e).unwrap();
        }
        let text = String::from_utf8(buf.clone()).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert!(text.starts_with(r#"{"event":"sample","run":"r""#), "{text}");
        let mut r = Reader::new(&buf[..], "s.jsonl");
        assert_eq!(r.next_event().unwrap().as_ref(), Some(&evs[0]));
        assert_eq!(r.next_event().unwrap().as_ref(), Some(&evs[1]));
        assert_eq!(r.next_event().unwrap(), None);
    }

    /// Values cross the stream bit for bit (serde_json's default float
    /// parser may be one unit in the last place off).
    #[test]
    fn floats_round_trip_exactly() {
        let mut x = 0.1f64;
        for _ in 0..10_000 {
            x = x * 1.618_033_988_749_895 + 1e-3;
            if x > 1e12 {
                x /= 3.7e11;
            }
            let text = serde_json::to_string(&x).unwrap();
            let back: f64 = serde_json::from_str(&text).unwrap();
            assert_eq!(back.to_bits(), x.to_bits(), "{text}");
        }
    }

    #[test]
    fn errors_name_the_line() {
        let input = b"\n{\"event\":\"sample\"}\n";
        let e = Reader::new(&input[..], "x.jsonl").next_event().unwrap_err();
        assert!(
            e.to_string().starts_with("x.jsonl:2: not a kbench event"),
            "{e}"
        );
        assert_eq!(crate::error::exit_code(&e), 2);
    }
}
