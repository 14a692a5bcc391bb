//! The scanner's and the stream reader's unit tests, kept apart from the code they check.

use super::*;

fn one(bytes: &[u8]) -> Frame<'_> {
    match Scanner::default().scan(bytes) {
        Ok(Scan::Frame(f, n)) => {
            assert_eq!(n, bytes.len(), "frame should occupy the whole input");
            f
        }
        other => panic!("expected a frame, got {other:?}"),
    }
}

fn error(bytes: &[u8]) -> RespError {
    Scanner::default()
        .scan(bytes)
        .expect_err("expected a framing error")
}

/// The default limits with one changed by `set`.
fn limited(set: impl FnOnce(&mut Limits)) -> Limits {
    let mut l = Limits::default();
    set(&mut l);
    l
}

#[test]
fn every_type_scans() {
    assert_eq!(one(b"+OK\r\n"), Frame::Simple(b"OK"));
    assert_eq!(one(b"-ERR x\r\n"), Frame::Error(b"ERR x"));
    assert_eq!(one(b":-42\r\n"), Frame::Integer(-42));
    assert_eq!(one(b"$3\r\na\r\n\r\n"), Frame::Blob(b"a\r\n"));
    assert_eq!(one(b"$0\r\n\r\n"), Frame::Blob(b""));
    assert_eq!(one(b"$-1\r\n"), Frame::Null);
    assert_eq!(one(b"*-1\r\n"), Frame::Null);
    assert_eq!(one(b"!5\r\nERR x\r\n"), Frame::BlobError(b"ERR x"));
    assert_eq!(
        one(b"=7\r\ntxt:abc\r\n"),
        Frame::Verbatim {
            format: b"txt",
            text: b"abc"
        }
    );
    assert_eq!(one(b"_\r\n"), Frame::Null);
    assert_eq!(one(b",1.5\r\n"), Frame::Double(1.5));
    assert_eq!(one(b",-inf\r\n"), Frame::Double(f64::NEG_INFINITY));
    assert!(matches!(one(b",nan\r\n"), Frame::Double(d) if d.is_nan()));
    assert_eq!(one(b"#t\r\n"), Frame::Boolean(true));
    assert_eq!(
        one(b"(12345678901234567890\r\n"),
        Frame::BigNumber(b"12345678901234567890")
    );
    assert_eq!(
        one(b"*2\r\n:1\r\n+a\r\n"),
        Frame::Array(vec![Frame::Integer(1), Frame::Simple(b"a")])
    );
    assert_eq!(
        one(b"%1\r\n+k\r\n:1\r\n"),
        Frame::Map(vec![(Frame::Simple(b"k"), Frame::Integer(1))])
    );
    assert_eq!(
        one(b"~1\r\n#f\r\n"),
        Frame::Set(vec![Frame::Boolean(false)])
    );
    assert_eq!(one(b">1\r\n+x\r\n"), Frame::Push(vec![Frame::Simple(b"x")]));
    assert_eq!(
        one(b"|1\r\n+ttl\r\n:3\r\n$1\r\nv\r\n"),
        Frame::Attributed {
            attributes: vec![(Frame::Simple(b"ttl"), Frame::Integer(3))],
            value: Box::new(Frame::Blob(b"v")),
        }
    );
}

#[test]
fn encoding_round_trips_canonical_frames() {
    let inputs: &[&[u8]] = &[
        b">4\r\n$6\r\nMOVING\r\n:0\r\n:15\r\n_\r\n",
        b"%1\r\n+k\r\n*2\r\n#t\r\n,1.5\r\n",
        b"|1\r\n+a\r\n:1\r\n=7\r\ntxt:abc\r\n",
        b"!3\r\nERR\r\n",
        b"(-99\r\n",
    ];
    for input in inputs {
        assert_eq!(&one(input).to_bytes(), input);
    }
}

#[test]
fn encode_command_builds_blob_arrays() {
    assert_eq!(
        encode_command(&["CLIENT", "MAINT_NOTIFICATIONS", "ON"]),
        b"*3\r\n$6\r\nCLIENT\r\n$19\r\nMAINT_NOTIFICATIONS\r\n$2\r\nON\r\n"
    );
}

#[test]
fn incomplete_is_not_an_error() {
    let full = b">4\r\n$6\r\nMOVING\r\n:0\r\n:15\r\n_\r\n";
    for cut in 0..full.len() {
        match Scanner::default().scan(&full[..cut]) {
            Ok(Scan::Incomplete { need }) => {
                assert!(need > cut && need <= full.len(), "cut {cut}: need {need}")
            }
            other => panic!("cut {cut}: {other:?}"),
        }
    }
}

#[test]
fn blob_header_gives_the_whole_length_needed() {
    assert_eq!(
        Scanner::default().scan(b"$100\r\nab"),
        Ok(Scan::Incomplete { need: 108 })
    );
}

#[test]
fn missing_crlf_names_the_offset() {
    let e = error(b"$2\r\nabX\n");
    assert_eq!(e.offset, 6);
    assert!(e.to_string().contains("at byte 6"), "{e}");
    let e = error(b"+OK\n");
    assert_eq!(e.offset, 3);
    let e = error(b"+OK\rX");
    assert_eq!(e.offset, 4);
    assert!(e.to_string().contains("'\\n' after '\\r'"), "{e}");
    let e = error(b"*1\r\n:1\r\r");
    assert_eq!(e.offset, 7);
}

#[test]
fn bad_headers_are_errors() {
    assert_eq!(error(b"?x\r\n").kind, ErrorKind::UnknownType(b'?'));
    assert!(matches!(error(b"$x\r\n").kind, ErrorKind::BadNumber(_)));
    assert!(matches!(error(b"$-2\r\n").kind, ErrorKind::Expected { .. }));
    assert!(matches!(error(b"%-1\r\n").kind, ErrorKind::Expected { .. }));
    assert!(matches!(error(b":\r\n").kind, ErrorKind::BadNumber(_)));
    assert!(matches!(
        error(b":99999999999999999999\r\n").kind,
        ErrorKind::BadNumber(_)
    ));
    assert!(matches!(error(b"#x\r\n").kind, ErrorKind::Expected { .. }));
    assert!(matches!(
        error(b",1.2.x\r\n").kind,
        ErrorKind::Expected { .. }
    ));
    assert!(matches!(
        error(b",infinity\r\n").kind,
        ErrorKind::Expected { .. }
    ));
    assert!(matches!(error(b"_x\r\n").kind, ErrorKind::Expected { .. }));
    assert!(matches!(
        error(b"=3\r\ntxt\r\n").kind,
        ErrorKind::Expected { .. }
    ));
    assert!(matches!(error(b"(12a\r\n").kind, ErrorKind::BadNumber(_)));
}

#[test]
fn a_plus_sign_and_minus_zero_are_refused_where_redis_never_writes_them() {
    // (input, offset of the number, kind)
    for (input, offset) in [
        (b":+5\r\n".as_slice(), 1),
        (b"$+3\r\nabc\r\n", 1),
        (b"*+1\r\n:1\r\n", 1),
        (b">+1\r\n:1\r\n", 1),
        (b"*1\r\n:+0\r\n", 5),
    ] {
        let e = error(input);
        assert!(matches!(e.kind, ErrorKind::BadNumber(_)), "{input:?}: {e}");
        assert_eq!(e.offset, offset, "{input:?}: {e}");
        assert!(e.to_string().contains(&format!("at byte {offset}")), "{e}");
    }
    for (input, offset) in [
        (b"*-0\r\n".as_slice(), 1),
        (b"$-0\r\n\r\n", 1),
        (b"%-0\r\n", 1),
        (b">1\r\n~-0\r\n", 5),
    ] {
        let e = error(input);
        assert!(
            matches!(e.kind, ErrorKind::Expected { .. }),
            "{input:?}: {e}"
        );
        assert_eq!(e.offset, offset, "{input:?}: {e}");
        assert!(e.to_string().contains("found -0"), "{e}");
    }
    // What stays: a '-' on integers, RESP2's nulls, zero lengths.
    assert_eq!(one(b":-5\r\n"), Frame::Integer(-5));
    assert_eq!(one(b":0\r\n"), Frame::Integer(0));
    assert_eq!(one(b"*-1\r\n"), Frame::Null);
    assert_eq!(one(b"$-1\r\n"), Frame::Null);
    assert_eq!(one(b"*0\r\n"), Frame::Array(vec![]));
    assert_eq!(one(b"$0\r\n\r\n"), Frame::Blob(b""));
}

#[test]
fn past_the_decode_budget_aggregates_keep_their_head_and_count() {
    let s = Scanner::new(limited(|l| l.max_decoded = 3));
    let input = b">2\r\n+invalidate\r\n*4\r\n:1\r\n:2\r\n:3\r\n:4\r\n+next\r\n";
    let Ok(Scan::Frame(frame, n)) = s.scan(input) else {
        panic!("{:?}", s.scan(input));
    };
    assert_eq!(n, input.len() - b"+next\r\n".len());
    // Every aggregate around an undecoded value says so; the decoded values are the first.
    assert_eq!(
        frame,
        Frame::Elided {
            tag: b'>',
            elements: 2,
            head: vec![
                Frame::Simple(b"invalidate"),
                Frame::Elided {
                    tag: b'*',
                    elements: 4,
                    head: vec![Frame::Integer(1)],
                },
            ]
        }
    );
    assert_eq!(frame.type_name(), "push");
    assert_eq!(frame.to_bytes(), b">2\r\n+invalidate\r\n*4\r\n:1\r\n");
    // A map is cut at a whole pair; the elements past the budget are still checked.
    let e = s
        .scan(b"%3\r\n:1\r\n:2\r\n:3\r\n:4\r\n:5\r\n:x\r\n")
        .unwrap_err();
    assert_eq!(e.offset, 25);
    let Ok(Scan::Frame(map, _)) = s.scan(b"%2\r\n:1\r\n:2\r\n:3\r\n*1\r\n:4\r\n") else {
        panic!()
    };
    assert_eq!(
        map,
        Frame::Elided {
            tag: b'%',
            elements: 4,
            head: vec![Frame::Integer(1), Frame::Integer(2)],
        }
    );
    assert_eq!(map.type_name(), "map");
}

#[test]
fn streamed_types_are_rejected_clearly() {
    let e = error(b"$?\r\n;4\r\nabcd\r\n;0\r\n");
    assert_eq!(e.kind, ErrorKind::Streamed(b'$'));
    assert_eq!(e.offset, 0);
    assert!(e.to_string().contains("streamed blob string"), "{e}");
    assert_eq!(error(b">1\r\n*?\r\n").offset, 4);
}

#[test]
fn limits_are_checked_before_allocating() {
    let e = error(b"$4294967296\r\n");
    assert_eq!(
        e.kind,
        ErrorKind::BlobTooLong {
            declared: 4294967296,
            limit: 512 * 1024 * 1024
        }
    );
    let e = error(b"*9223372036854775807\r\n");
    assert!(matches!(e.kind, ErrorKind::TooManyElements { .. }), "{e}");
    let deep = b"*1\r\n".repeat(10_000);
    let e = error(&deep);
    assert_eq!(e.kind, ErrorKind::TooDeep { limit: 64 });
    assert_eq!(e.offset, 64 * 4);
    let small = Scanner::new(limited(|l| l.max_frame = 10));
    let e = small.scan(b"$20\r\n").unwrap_err();
    assert!(matches!(e.kind, ErrorKind::FrameTooLarge { .. }), "{e}");
    let e = small.scan(b"+aaaaaaaaaaaaaaaa").unwrap_err();
    assert!(matches!(e.kind, ErrorKind::FrameTooLarge { .. }), "{e}");
    // A whole frame over the limit, arrived in one read, is refused too.
    let e = small.scan(b"*2\r\n:1\r\n:2\r\n").unwrap_err();
    assert!(matches!(e.kind, ErrorKind::FrameTooLarge { .. }), "{e}");
}

#[test]
fn depth_limit_allows_exactly_the_limit() {
    let limits = limited(|l| l.max_depth = 3);
    let s = Scanner::new(limits);
    assert!(matches!(
        s.scan(b"*1\r\n*1\r\n*1\r\n:1\r\n"),
        Ok(Scan::Frame(..))
    ));
    assert!(s.scan(b"*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n").is_err());
}

#[test]
fn stream_reader_reports_absolute_offsets_after_good_frames() {
    let mut r = StreamReader::default();
    r.extend(b"+OK\r\n:1\r\n$2\r\nab\r\r");
    let mut seen = Vec::new();
    let e = r
        .drain(|f, raw, off| seen.push((f.type_name(), raw.to_vec(), off)))
        .unwrap_err();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[1], ("integer", b":1\r\n".to_vec(), 5));
    assert_eq!(e.offset, 9 + 7);
}

fn flat<'a>(bytes: &'a [u8], nodes: &'a mut Vec<Node>) -> FlatFrame<'a, 'a> {
    match Scanner::default().scan_flat(bytes, nodes) {
        Ok(FlatScan::Frame(f)) => f,
        other => panic!("expected a frame, got {other:?}"),
    }
}

#[test]
fn a_node_is_16_bytes() {
    assert_eq!(std::mem::size_of::<Node>(), 16);
    assert!(std::mem::size_of::<Node>() < std::mem::size_of::<Frame<'static>>());
}

#[test]
fn a_flat_frame_reads_like_the_tree() {
    let input = b">4\r\n$6\r\nMOVING\r\n:-7\r\n*2\r\n=7\r\ntxt:abc\r\n#t\r\n%1\r\n+k\r\n,1.5\r\n";
    let mut nodes = Vec::new();
    let frame = flat(input, &mut nodes);
    assert_eq!(frame.raw(), input);
    assert_eq!(frame.decoded(), 9);
    let push = frame.root();
    assert_eq!(
        (push.kind(), push.len(), push.declared()),
        (Kind::Push, 4, 4)
    );
    let items: Vec<_> = push.children().collect();
    assert_eq!(items[0].as_text(), Some(&b"MOVING"[..]));
    assert_eq!(items[1].integer(), Some(-7));
    let inner: Vec<_> = items[2].children().collect();
    assert_eq!(inner[0].format(), Some(&b"txt"[..]));
    assert_eq!(inner[0].as_text(), Some(&b"abc"[..]));
    assert_eq!(inner[1].boolean(), Some(true));
    // Siblings after a nested aggregate are found past its descendants.
    let map: Vec<_> = items[3].children().collect();
    assert_eq!((items[3].kind(), items[3].declared()), (Kind::Map, 2));
    assert_eq!(map[0].bytes(), Some(&b"k"[..]));
    assert_eq!(map[1].double(), Some(1.5));
    assert_eq!(frame.to_frame(), one(input));
}

#[test]
fn scanning_flat_again_reuses_the_node_list() {
    let input = b">3\r\n$8\r\nMIGRATED\r\n:1\r\n*1\r\n$6\r\n[\"27\"]\r\n";
    let mut nodes = Vec::new();
    flat(input, &mut nodes);
    let (at, capacity) = (nodes.as_ptr(), nodes.capacity());
    for _ in 0..100 {
        assert_eq!(flat(input, &mut nodes).root().len(), 3);
    }
    assert_eq!((nodes.as_ptr(), nodes.capacity()), (at, capacity));
}

#[test]
fn a_flat_frame_past_the_budget_is_elided_like_the_tree() {
    let s = Scanner::new(limited(|l| l.max_decoded = 3));
    let input = b">2\r\n+invalidate\r\n*4\r\n:1\r\n:2\r\n:3\r\n:4\r\n";
    let mut nodes = Vec::new();
    let Ok(FlatScan::Frame(frame)) = s.scan_flat(input, &mut nodes) else {
        panic!()
    };
    let root = frame.root();
    assert!(root.is_elided());
    let array = root.children().nth(1).unwrap();
    assert!(array.is_elided());
    assert_eq!((array.declared(), array.len()), (4, 1));
    assert_eq!(
        frame.to_frame(),
        s.scan(input)
            .map(|r| match r {
                Scan::Frame(f, _) => f,
                _ => panic!(),
            })
            .unwrap()
    );
}

#[test]
fn short_blobs_read_in_one_go_keep_every_limit_and_error() {
    let s = Scanner::new(Limits {
        max_blob: 5,
        max_frame: 16,
        ..Limits::default()
    });
    let blob = |b: &[u8]| match s.scan(b) {
        Ok(Scan::Frame(f, n)) => format!("{f:?} {n}"),
        Ok(Scan::Incomplete { need }) => format!("need {need}"),
        Err(e) => format!("{e}"),
    };
    assert_eq!(
        blob(b"$5\r\nabcde\r\n"),
        format!("{:?} 11", Frame::Blob(b"abcde"))
    );
    assert_eq!(
        blob(b"$05\r\nabcde\r\n"),
        format!("{:?} 12", Frame::Blob(b"abcde"))
    );
    assert_eq!(blob(b"$0\r\n\r\n"), format!("{:?} 6", Frame::Blob(b"")));
    // Past max_blob, a missing CRLF, an incomplete body: the exact way's answers.
    assert!(blob(b"$6\r\nabcdef\r\n").starts_with("at byte 0: "));
    assert!(blob(b"$2\r\nabc\r\n").starts_with("at byte 6: "));
    assert_eq!(blob(b"$2\r\na"), "need 8");
    assert_eq!(blob(b"$2\r\n"), "need 8");
    let tight = Scanner::new(limited(|l| l.max_frame = 8));
    let e = tight.scan(b"$3\r\nabc\r\n").unwrap_err();
    assert_eq!(e.kind, ErrorKind::FrameTooLarge { size: 9, limit: 8 });
}

#[test]
fn frames_are_capped_at_four_gib_whatever_the_limit_says() {
    let s = Scanner::new(Limits {
        max_frame: u64::MAX,
        max_blob: u64::MAX,
        ..Limits::default()
    });
    let e = s.scan(b"$4294967296\r\n").unwrap_err();
    assert_eq!(
        e.kind,
        ErrorKind::FrameTooLarge {
            size: 4294967296 + 15,
            limit: MAX_FRAME_CAP
        }
    );
}

#[test]
fn drain_flat_gives_what_drain_gives() {
    let input = b"+OK\r\n>2\r\n$4\r\nPING\r\n:1\r\n$2\r\nab\r\r";
    let (mut a, mut b) = (StreamReader::default(), StreamReader::default());
    a.extend(input);
    b.extend(input);
    let mut trees = Vec::new();
    let ea = a.drain(|f, raw, off| trees.push((f.to_bytes(), raw.to_vec(), off)));
    let mut flats = Vec::new();
    let eb = b.drain_flat(|f, off| flats.push((f.to_frame().to_bytes(), f.raw().to_vec(), off)));
    assert_eq!(trees.len(), 2);
    assert_eq!(trees, flats);
    assert_eq!(ea.unwrap_err(), eb.unwrap_err());
}

/// Everything a reader says after each piece: frames with their offsets, the error, the
/// work, the offset and what is left buffered.
type Said = (Vec<(Vec<u8>, u64)>, Option<RespError>, u64, u64, Vec<u8>);

fn fed(pieces: &[&[u8]], straight: bool) -> Vec<Said> {
    fed_by(pieces, |r, piece| {
        let mut frames = Vec::new();
        let each = |f: FlatFrame<'_, '_>, off| frames.push((f.raw().to_vec(), off));
        let result = if straight {
            r.feed_flat(piece, each)
        } else {
            r.extend(piece);
            r.drain_flat(each)
        };
        (frames, result)
    })
}

/// One reader given the pieces in turn, `step` taking each; after each, what the reader says.
fn fed_by(
    pieces: &[&[u8]],
    mut step: impl FnMut(&mut StreamReader, &[u8]) -> (Vec<(Vec<u8>, u64)>, Result<(), RespError>),
) -> Vec<Said> {
    let mut r = StreamReader::default();
    let mut out = Vec::new();
    for piece in pieces {
        let (frames, result) = step(&mut r, piece);
        let (work, at) = (r.work(), r.offset());
        out.push((frames, result.err(), work, at, r.buffered().to_vec()));
    }
    out
}

/// Asserts that `ours` says what `fed(.., false)` (extend then drain_flat) says, for every
/// split of each input into three pieces, empty ones included.
fn says_the_same_however_split(inputs: &[&[u8]], ours: impl Fn(&[&[u8]]) -> Vec<Said>) {
    for input in inputs {
        for a in 0..=input.len() {
            for b in a..=input.len() {
                let pieces = [&input[..a], &input[a..b], &input[b..]];
                assert_eq!(ours(&pieces), fed(&pieces, false), "split at {a} and {b}");
            }
        }
    }
}

#[test]
fn feed_flat_says_what_extend_and_drain_flat_say_however_the_bytes_are_split() {
    let inputs: [&[u8]; 3] = [
        b"+OK\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\n>2\r\n$4\r\nPING\r\n:1\r\n%1\r\n+a\r\n:2\r\n",
        b"$10\r\n0123456789\r\n:7\r\n$2\r\nab\r\r+after\r\n",
        b"*2\r\n*1\r\n:1\r\n?x\r\n",
    ];
    says_the_same_however_split(&inputs, |pieces| fed(pieces, true));
}

/// [`fed`] through `drain_shared`: each frame's bytes are cut from the buffer it hands back,
/// by the offsets alone (as the watch's reader does), and that buffer must hold exactly the
/// frames delivered, from the offset the reader had before the call.
fn fed_shared(pieces: &[&[u8]]) -> Vec<Said> {
    fed_by(pieces, |r, piece| {
        let start = r.offset();
        let mut offsets = Vec::new();
        r.extend(piece);
        let (shared, result) = r.drain_shared(|_, off| offsets.push(off));
        assert_eq!(start + shared.len() as u64, r.offset());
        let mut frames = Vec::new();
        for (i, &off) in offsets.iter().enumerate() {
            let end = offsets
                .get(i + 1)
                .map_or(shared.len(), |&next| (next - start) as usize);
            frames.push((shared.slice((off - start) as usize..end).to_vec(), off));
        }
        (frames, result)
    })
}

#[test]
fn drain_shared_says_what_drain_flat_says_however_the_bytes_are_split() {
    let inputs: [&[u8]; 3] = [
        b"+OK\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\n>2\r\n$4\r\nPING\r\n:1\r\n%1\r\n+a\r\n:2\r\n",
        b"$10\r\n0123456789\r\n:7\r\n$2\r\nab\r\r+after\r\n",
        b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$3\r\nabc\r\n*2\r\n*1\r\n:1\r\n?x\r\n",
    ];
    says_the_same_however_split(&inputs, fed_shared);
}

/// The frames of a read leave in one buffer, where they lay: the second frame's bytes start
/// where the first one's end, in memory too, so nothing was copied. Once they are dropped, the
/// reader fills the same allocation again rather than making a new one.
#[test]
fn drain_shared_hands_the_frames_over_where_they_lay() {
    let mut r = StreamReader::default();
    r.buffer_mut().reserve(1024);
    r.extend(b"+OK\r\n:12\r\n$3");
    let before = r.buffered().as_ptr();
    let (shared, result) = r.drain_shared(|_, _| {});
    result.unwrap();
    assert_eq!(
        (&shared[..], shared.as_ptr()),
        (&b"+OK\r\n:12\r\n"[..], before)
    );
    let (ok, twelve) = (shared.slice(..5), shared.slice(5..));
    assert_eq!(twelve.as_ptr(), ok.as_ptr().wrapping_add(5));
    assert_eq!(r.buffered(), b"$3");
    drop((shared, ok, twelve));
    r.extend(b"\r\nabc\r\n");
    let (shared, _) = r.drain_shared(|_, _| {});
    assert_eq!(&shared[..], b"$3\r\nabc\r\n");
    // The same allocation, a few bytes on: no new buffer for the second read.
    assert_eq!(shared.as_ptr(), before.wrapping_add(10));
}

/// A huge frame handed over shared is given back when it is dropped: the reader keeps no part
/// of its allocation for the frames after it (the frame holds it alone), whereas small frames
/// share theirs with the reader, which goes on filling it.
#[test]
fn a_huge_frame_handed_over_shared_does_not_stay_with_the_reader() {
    let mut huge = b"$4200000\r\n".to_vec();
    huge.extend(std::iter::repeat_n(b'x', 4_200_000));
    huge.extend_from_slice(b"\r\n+next\r\n$1");
    let mut r = StreamReader::default();
    let mut frames = 0;
    let mut held = Vec::new();
    for piece in huge.chunks(64 * 1024) {
        r.extend(piece);
        let (shared, result) = r.drain_shared(|_, _| frames += 1);
        result.unwrap();
        if !shared.is_empty() {
            held.push(shared);
        }
    }
    assert_eq!((frames, held.len()), (2, 1));
    assert!(
        held[0].is_unique(),
        "the reader still shares the huge frame's allocation"
    );
    assert_eq!(r.buffered(), b"$1");
    r.extend(b"\r\nx\r\n+small\r\n");
    let (shared, _) = r.drain_shared(|_, _| frames += 1);
    assert_eq!((frames, &shared[..]), (4, &b"$1\r\nx\r\n+small\r\n"[..]));
    assert!(
        !shared.is_unique(),
        "small frames share the buffer the reader fills"
    );
    assert!(
        r.buffer_mut().capacity() < huge.len() / 2,
        "{} bytes kept after the frame was handed over",
        r.buffer_mut().capacity()
    );
}

#[test]
fn feed_flat_copies_nothing_when_whole_frames_arrive() {
    let mut r = StreamReader::default();
    let mut n = 0;
    r.feed_flat(b"+OK\r\n:1\r\n", |_, _| n += 1).unwrap();
    assert_eq!((n, r.buf.capacity()), (2, 0));
    r.feed_flat(b"$3\r\nab", |_, _| n += 1).unwrap();
    assert_eq!(r.buffered(), b"$3\r\nab");
    r.feed_flat(b"c\r\n+x\r\n", |_, _| n += 1).unwrap();
    assert_eq!((n, r.offset()), (4, 22));
    assert!(r.buffered().is_empty());
}

#[test]
fn stream_reader_waits_for_the_declared_length() {
    let mut r = StreamReader::default();
    r.extend(b"$5\r\nab");
    let mut n = 0;
    r.drain(|_, _, _| n += 1).unwrap();
    r.extend(b"c");
    r.drain(|_, _, _| n += 1).unwrap();
    assert_eq!(n, 0);
    r.extend(b"de\r\n+x\r\n");
    r.drain(|_, _, _| n += 1).unwrap();
    assert_eq!(n, 2);
    assert_eq!(r.offset(), 15);
    assert!(r.buffered().is_empty());
}

/// What a scan said, with or without the one-pass read of short-blob arrays.
fn scanned_with(s: &Scanner, bytes: &[u8], short: bool) -> String {
    let mut nodes = Vec::new();
    match s.scan_flat_with(bytes, &mut nodes, short) {
        Ok(FlatScan::Frame(f)) => format!("frame {} {:?}", f.raw().len(), f.nodes),
        Ok(FlatScan::Incomplete { need }) => format!("need {need}"),
        Err(e) => format!("error {e:?}"),
    }
}

#[test]
fn short_arrays_and_simple_strings_read_in_one_pass_as_the_exact_way_reads_them() {
    let frames: [&[u8]; 10] = [
        b"+OK\r\n",
        b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$16\r\nmsg:000000123456\r\n",
        b">2\r\n$6\r\nMOVING\r\n>1\r\n$1\r\na\r\n",
        b"+a status line\r\n",
        b"*3\r\n$3\r\nSET\r\n$16\r\nkey:000000000001\r\n$5\r\nvalue\r\n",
        b"*1\r\n$4\r\nPING\r\n",
        b"*2\r\n$0\r\n\r\n$12\r\nhello\r\nworld\r\n",
        b"*10\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n$1\r\nf\r\n$1\r\ng\r\n$1\r\nh\r\n$1\r\ni\r\n$1\r\nj\r\n",
        b"*2\r\n*1\r\n$1\r\na\r\n$1\r\nb\r\n",
        b"*2\r\n$1\r\na\r\n:1\r\n",
    ];
    let limits = [
        Limits::default(),
        limited(|l| l.max_blob = 3),
        limited(|l| l.max_frame = 20),
        limited(|l| l.max_elements = 2),
        limited(|l| l.max_decoded = 1),
        limited(|l| l.max_depth = 0),
        limited(|l| l.max_frame = 4),
    ];
    let mut checked = 0;
    for l in limits {
        let s = Scanner::new(l);
        for frame in frames {
            let mut inputs: Vec<Vec<u8>> = (0..=frame.len()).map(|n| frame[..n].to_vec()).collect();
            for i in 0..frame.len() {
                for b in *b"\r\n$*>09x-+" {
                    let mut changed = frame.to_vec();
                    changed[i] = b;
                    inputs.push(changed);
                }
            }
            for input in inputs {
                let fast = scanned_with(&s, &input, true);
                assert_eq!(
                    fast,
                    scanned_with(&s, &input, false),
                    "{:?}",
                    input.escape_ascii().to_string()
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 1000);
}
