//! Routing datagrams among the workers of a multi-core server by
//! connection ID.
//!
//! N endpoints bind the same address with `SO_REUSEPORT`; by default Linux
//! spreads datagrams over them by a hash of the 4-tuple, which sends a
//! client whose address changes (a NAT rebinding, a migration) to a worker
//! that has never heard of it. [`attach_cid_steering`] loads a classic BPF
//! program into the group (`SO_ATTACH_REUSEPORT_CBPF`) that returns, for
//! each datagram, the socket index `HalfSipHash_k(dcid[0..8]) mod N`, the
//! keyed function by which each worker draws the connection IDs it issues
//! (`wire::steering`). The key ([`steering_key`]) is drawn from the
//! operating system when the group is bound and known only to the server
//! and its kernel, so an observer cannot tell which IDs share a worker
//! (RFC 9000 §5.1). Classic BPF, not eBPF: it needs no `CAP_BPF`, no BPF
//! file system and no loader crate; HalfSipHash is additions, xors and
//! rotations of 32-bit words, which the accumulator, the index register
//! and the scratch words compute in [`PROGRAM_LEN`] instructions (of the
//! 4096 the kernel allows).
//!
//! The kernel numbers a group's sockets in the order they joined it, so
//! worker `i` must be the `i`-th socket bound (what [`bind_reuseport_group`]
//! does). A datagram shorter than `wire::steering::MIN_STEERED_DATAGRAM`
//! (14 bytes: a long header's eight ID bytes) gets a result past the last
//! socket, which falls back to the kernel's hash: such a datagram is not a
//! packet of ours anyway.
//!
//! The program sees a GRO run (or a peer's GSO send) as one datagram and
//! steers it by the first ID, and GRO merges by address and port alone: a
//! client with several connections on one socket can have its connections'
//! datagrams merged into one run. A worker whose datagrams route to another
//! worker stops GRO on its socket (`Datapath::stop_gro`); the strays are
//! dropped, never answered with a stateless reset (`endpoint::reset`).

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

use super::socket::{bind_udp, SocketOptions, SocketReport};
use crate::wire::steering::half_siphash::{self, C_ROUNDS, D_ROUNDS, FINAL_XOR, ROTATIONS};
use crate::wire::steering::{
    SteeringKey, DCID_FIRST_BYTE_LONG, DCID_FIRST_BYTE_SHORT, MAX_WORKERS, MIN_STEERED_DATAGRAM,
    STEERING_INPUT_LEN,
};

/// `SO_ATTACH_REUSEPORT_CBPF` (linux/asm-generic/socket.h); the `libc`
/// crate does not export it for every target.
pub const SO_ATTACH_REUSEPORT_CBPF: libc::c_int = 51;

/// The long-header form bit of the first byte, as the program loads it.
const LONG_FORM_BIT: u32 = crate::wire::header::LONG_FORM_BIT as u32;

/// What the program returns for a datagram it cannot read: past every
/// socket, so the kernel picks one by its hash.
const TO_THE_KERNELS_HASH: u32 = u32::MAX;

/// Instructions in the program (for any key and worker count).
pub const PROGRAM_LEN: usize = 752;

/// A fresh steering key from the operating system's generator, for one
/// reuseport group for as long as the server runs.
pub fn steering_key() -> SteeringKey {
    use rand::TryRngCore;
    let mut bytes = [0u8; SteeringKey::LEN];
    // As `os_entropy`: a failing getrandom is a broken system, not input.
    rand::rngs::OsRng
        .try_fill_bytes(&mut bytes)
        .expect("the operating system's random number generator failed");
    SteeringKey::from_bytes(bytes)
}

/// Scratch words of the program: HalfSipHash's state v0..v3 in 0..=3, the
/// two input words in 4 and 5.
const V: [u32; 4] = [0, 1, 2, 3];
const INPUT: [u32; 2] = [4, 5];

/// A classic-BPF program being written, straight-line, with the scratch
/// word the accumulator and the index register are known to hold, so a
/// load of a word just stored is left out.
struct Emitter {
    program: Vec<libc::sock_filter>,
    a_holds: Option<u32>,
    x_holds: Option<u32>,
}

fn op(code: u32) -> u16 {
    u16::try_from(code).unwrap_or_default()
}

fn stmt(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: op(code),
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u32, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: op(code),
        jt,
        jf,
        k,
    }
}

impl Emitter {
    fn new(program: Vec<libc::sock_filter>) -> Self {
        Self {
            program,
            a_holds: None,
            x_holds: None,
        }
    }

    fn load(&mut self, word: u32) {
        if self.a_holds != Some(word) {
            self.program.push(stmt(libc::BPF_LD | libc::BPF_MEM, word));
            self.a_holds = Some(word);
        }
    }

    fn load_x(&mut self, word: u32) {
        if self.x_holds != Some(word) {
            self.program.push(stmt(libc::BPF_LDX | libc::BPF_MEM, word));
            self.x_holds = Some(word);
        }
    }

    fn store(&mut self, word: u32) {
        self.program.push(stmt(libc::BPF_ST, word));
        self.a_holds = Some(word);
        if self.x_holds == Some(word) {
            self.x_holds = None;
        }
    }

    fn set(&mut self, word: u32, value: u32) {
        self.program.push(stmt(libc::BPF_LD | libc::BPF_IMM, value));
        self.store(word);
    }

    /// A = A op X.
    fn alu_x(&mut self, operation: u32) {
        self.program
            .push(stmt(libc::BPF_ALU | operation | libc::BPF_X, 0));
        self.a_holds = None;
    }

    /// A = A op k.
    fn alu_k(&mut self, operation: u32, k: u32) {
        self.program
            .push(stmt(libc::BPF_ALU | operation | libc::BPF_K, k));
        self.a_holds = None;
    }

    /// word = word op other (add or xor).
    fn combine(&mut self, operation: u32, word: u32, other: u32) {
        self.load(word);
        self.load_x(other);
        self.alu_x(operation);
        self.store(word);
    }

    /// word ^= k.
    fn xor_k(&mut self, word: u32, k: u32) {
        self.load(word);
        self.alu_k(libc::BPF_XOR, k);
        self.store(word);
    }

    /// word = (word << r) | (word >> (32 - r)).
    fn rotate_left(&mut self, word: u32, r: u32) {
        self.load(word);
        self.alu_k(libc::BPF_RSH, 32 - r);
        self.program.push(stmt(libc::BPF_MISC | libc::BPF_TAX, 0));
        self.x_holds = None;
        self.load(word);
        self.alu_k(libc::BPF_LSH, r);
        self.alu_x(libc::BPF_OR);
        self.store(word);
    }

    /// One SipRound, in the order `half_siphash::round` does it.
    fn round(&mut self) {
        let [v0, v1, v2, v3] = V;
        self.combine(libc::BPF_ADD, v0, v1);
        self.rotate_left(v1, ROTATIONS[0]);
        self.combine(libc::BPF_XOR, v1, v0);
        self.rotate_left(v0, ROTATIONS[1]);
        self.combine(libc::BPF_ADD, v2, v3);
        self.rotate_left(v3, ROTATIONS[2]);
        self.combine(libc::BPF_XOR, v3, v2);
        self.combine(libc::BPF_ADD, v0, v3);
        self.rotate_left(v3, ROTATIONS[3]);
        self.combine(libc::BPF_XOR, v3, v0);
        self.combine(libc::BPF_ADD, v2, v1);
        self.rotate_left(v1, ROTATIONS[4]);
        self.combine(libc::BPF_XOR, v1, v2);
        self.rotate_left(v2, ROTATIONS[5]);
    }

    fn rounds(&mut self, count: usize) {
        for _ in 0..count {
            self.round();
        }
    }
}

/// Loads the eight input bytes at `at` into the scratch words.
fn load_input(at: u32) -> [libc::sock_filter; 4] {
    [
        stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, at),
        stmt(libc::BPF_ST, INPUT[0]),
        stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, at + 4),
        stmt(libc::BPF_ST, INPUT[1]),
    ]
}

/// The program: pick the socket `HalfSipHash-2-4_key(w0, w1) mod workers`,
/// where w0 and w1 are the two big-endian words of the DCID's first eight
/// bytes, read where the header form puts them
/// (`half_siphash::steering_hash`). The data the kernel shows a reuseport
/// program starts at the UDP payload.
fn steering_program(key: SteeringKey, workers: u32) -> Vec<libc::sock_filter> {
    // Prologue: read the input, or leave the datagram to the kernel.
    // (The kernel's checker follows a RET into the next instruction, so
    // the fallback comes before any scratch word is written.)
    //   len < MIN_STEERED_DATAGRAM? return past every socket;
    //   flags; short header? → short;
    //   long input; jump to the hash;
    //   short: short input;
    //   hash: …
    let long = load_input(DCID_FIRST_BYTE_LONG);
    let short = load_input(DCID_FIRST_BYTE_SHORT);
    let mut program = vec![
        stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_LEN, 0),
        jump(
            libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K,
            MIN_STEERED_DATAGRAM as u32,
            1,
            0,
        ),
        stmt(libc::BPF_RET | libc::BPF_K, TO_THE_KERNELS_HASH),
        stmt(libc::BPF_LD | libc::BPF_B | libc::BPF_ABS, 0),
        jump(
            libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K,
            LONG_FORM_BIT,
            0,
            u8::try_from(long.len() + 1).unwrap_or_default(),
        ),
    ];
    program.extend_from_slice(&long);
    program.push(stmt(libc::BPF_JMP | libc::BPF_JA, short.len() as u32));
    program.extend_from_slice(&short);
    // The hash, straight-line from here (`half_siphash::hash_words`).
    let mut hash = Emitter::new(program);
    for (word, value) in V.into_iter().zip(half_siphash::initial_state(key.words())) {
        hash.set(word, value);
    }
    let [v0, _, v2, v3] = V;
    for input in INPUT {
        hash.combine(libc::BPF_XOR, v3, input);
        hash.rounds(C_ROUNDS);
        hash.combine(libc::BPF_XOR, v0, input);
    }
    let last = (STEERING_INPUT_LEN as u32) << 24;
    hash.xor_k(v3, last);
    hash.rounds(C_ROUNDS);
    hash.xor_k(v0, last);
    hash.xor_k(v2, FINAL_XOR);
    hash.rounds(D_ROUNDS);
    hash.combine(libc::BPF_XOR, V[1], v3);
    hash.alu_k(libc::BPF_MOD, workers);
    hash.program.push(stmt(libc::BPF_RET | libc::BPF_A, 0));
    hash.program
}

/// Loads the routing program into the reuseport group of `socket` (any of
/// its sockets): datagrams go to socket `HalfSipHash_key(dcid[0..8]) mod
/// workers`, the worker `wire::CidSteering::worker_of` names.
pub fn attach_cid_steering(
    socket: &impl AsRawFd,
    key: SteeringKey,
    workers: usize,
) -> io::Result<()> {
    if workers == 0 || workers > MAX_WORKERS {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("workers must be 1..={MAX_WORKERS}, not {workers}"),
        ));
    }
    let mut program = steering_program(key, workers as u32);
    let fprog = libc::sock_fprog {
        len: program.len() as libc::c_ushort,
        filter: program.as_mut_ptr(),
    };
    // SAFETY: the fd is open for the borrow; `fprog` points at `program`,
    // which outlives the call (the kernel copies it).
    let result = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_ATTACH_REUSEPORT_CBPF,
            (&fprog as *const libc::sock_fprog).cast(),
            std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    if result == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Binds `workers` sockets to `addr` in one reuseport group, in worker
/// order, and loads the routing program under `key`: socket `i` gets the
/// datagrams whose connection ID routes to worker `i`. Port 0 binds the
/// first socket to a free port and the others to the same one.
pub fn bind_reuseport_group(
    addr: SocketAddr,
    options: SocketOptions,
    key: SteeringKey,
    workers: usize,
) -> io::Result<Vec<(UdpSocket, SocketReport)>> {
    refuse_taken(addr)?;
    let options = SocketOptions {
        reuse_port: true,
        ..options
    };
    let mut sockets: Vec<(UdpSocket, SocketReport)> = Vec::with_capacity(workers);
    let mut at = addr;
    for _ in 0..workers {
        let bound = bind_udp(at, options)?;
        at = bound.0.local_addr()?;
        sockets.push(bound);
    }
    if let Some((first, _)) = sockets.first() {
        attach_cid_steering(first, key, workers)?;
    }
    Ok(sockets)
}

/// Fails with `AddrInUse` when a socket already holds `addr`. Linux lets
/// any socket of the same user that sets `SO_REUSEPORT` join a group, so a
/// second server started on the same port by mistake would take a share
/// of the first one's clients, each hashed to one or the other. A socket
/// without the option (this probe, closed at once) cannot bind a port
/// that any socket holds.
fn refuse_taken(addr: SocketAddr) -> io::Result<()> {
    if addr.port() == 0 {
        return Ok(());
    }
    let probe = bind_udp(addr, SocketOptions::default())?;
    drop(probe);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::CidSteering;
    use rand::{Rng, RngCore, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use std::time::Duration;

    /// A classic-BPF interpreter for what the steering program uses, with
    /// the kernel's rules where they matter: a load past the datagram ends
    /// the program returning 0, and (as the kernel's checker insists) no
    /// scratch word is read before it is written.
    fn run(program: &[libc::sock_filter], datagram: &[u8]) -> u32 {
        let (mut a, mut x) = (0u32, 0u32);
        let mut scratch: [Option<u32>; 16] = [None; 16];
        let mut pc = 0;
        let load = |at: u32, len: usize| -> Option<u32> {
            let at = usize::try_from(at).ok()?;
            let bytes = datagram.get(at..at.checked_add(len)?)?;
            Some(bytes.iter().fold(0, |word, &b| (word << 8) | u32::from(b)))
        };
        loop {
            let insn = program[pc];
            let code = u32::from(insn.code);
            let k = insn.k;
            pc += 1;
            let word = |k: u32| usize::try_from(k).unwrap();
            match code {
                c if c == libc::BPF_LD | libc::BPF_W | libc::BPF_ABS => match load(k, 4) {
                    Some(value) => a = value,
                    None => return 0,
                },
                c if c == libc::BPF_LD | libc::BPF_B | libc::BPF_ABS => match load(k, 1) {
                    Some(value) => a = value,
                    None => return 0,
                },
                c if c == libc::BPF_LD | libc::BPF_W | libc::BPF_LEN => a = datagram.len() as u32,
                c if c == libc::BPF_LD | libc::BPF_IMM => a = k,
                c if c == libc::BPF_LD | libc::BPF_MEM => {
                    a = scratch[word(k)].expect("scratch read before written")
                }
                c if c == libc::BPF_LDX | libc::BPF_MEM => {
                    x = scratch[word(k)].expect("scratch read before written")
                }
                c if c == libc::BPF_ST => scratch[word(k)] = Some(a),
                c if c == libc::BPF_MISC | libc::BPF_TAX => x = a,
                c if c & 0x07 == libc::BPF_ALU => {
                    let operand = if c & libc::BPF_X != 0 { x } else { k };
                    a = match c & 0xf0 {
                        libc::BPF_ADD => a.wrapping_add(operand),
                        libc::BPF_XOR => a ^ operand,
                        libc::BPF_OR => a | operand,
                        libc::BPF_LSH => a << operand,
                        libc::BPF_RSH => a >> operand,
                        libc::BPF_MOD => a % operand,
                        other => panic!("ALU op {other:#x} not interpreted"),
                    };
                }
                c if c == libc::BPF_JMP | libc::BPF_JA => pc += word(k),
                c if c & 0x07 == libc::BPF_JMP => {
                    let taken = match c & 0xf0 {
                        libc::BPF_JGE => a >= k,
                        libc::BPF_JSET => a & k != 0,
                        other => panic!("jump {other:#x} not interpreted"),
                    };
                    pc += usize::from(if taken { insn.jt } else { insn.jf });
                }
                c if c == libc::BPF_RET | libc::BPF_K => return k,
                c if c == libc::BPF_RET | libc::BPF_A => return a,
                other => panic!("instruction {other:#x} not interpreted"),
            }
        }
    }

    /// A short-header datagram to `dcid`, and a long-header one.
    fn short_header(dcid: &[u8]) -> Vec<u8> {
        let mut datagram = vec![0x40];
        datagram.extend_from_slice(dcid);
        datagram.extend_from_slice(&[0; 30]);
        datagram
    }

    fn long_header(dcid: &[u8]) -> Vec<u8> {
        let mut datagram = vec![0xc0, 0, 0, 0, 1, 8];
        datagram.extend_from_slice(dcid);
        datagram.extend_from_slice(&[0; 30]);
        datagram
    }

    fn random_key(rng: &mut impl RngCore) -> SteeringKey {
        let mut bytes = [0u8; SteeringKey::LEN];
        rng.fill_bytes(&mut bytes);
        SteeringKey::from_bytes(bytes)
    }

    #[test]
    fn the_program_fits_the_kernels_limit() {
        let program = steering_program(SteeringKey::from_bytes([7; 8]), 100);
        assert_eq!(program.len(), PROGRAM_LEN);
        assert!(PROGRAM_LEN <= libc::BPF_MAXINSNS as usize);
    }

    /// What the kernel computes for a datagram is what the server thinks
    /// it computes: the same worker, or the kernel's hash for a datagram
    /// too short to read.
    #[test]
    fn the_program_picks_the_worker_the_server_computes_for_every_datagram() {
        let mut rng = ChaCha8Rng::seed_from_u64(53);
        for workers in [1, 2, 3, 8, 100, MAX_WORKERS] {
            for _ in 0..4 {
                let key = random_key(&mut rng);
                let program = steering_program(key, workers as u32);
                let steering = CidSteering::new(0, workers, key).unwrap();
                for _ in 0..500 {
                    let len = rng.random_range(0..40);
                    let mut datagram = vec![0u8; len];
                    rng.fill_bytes(&mut datagram);
                    let picked = run(&program, &datagram);
                    match steering.worker_of_datagram(&datagram) {
                        Some(worker) => assert_eq!(picked as usize, worker, "{datagram:x?}"),
                        None => assert_eq!(picked, TO_THE_KERNELS_HASH, "{datagram:x?}"),
                    }
                }
                for index in 0..workers {
                    let dcid = steering.for_worker(index).unwrap().draw(&mut rng);
                    for datagram in [short_header(dcid.as_slice()), long_header(dcid.as_slice())] {
                        assert_eq!(run(&program, &datagram) as usize, index);
                    }
                }
            }
        }
    }

    #[test]
    fn a_group_will_not_join_a_port_another_socket_holds() {
        let key = SteeringKey::from_bytes([1; 8]);
        let bind = |addr: SocketAddr| bind_reuseport_group(addr, SocketOptions::default(), key, 2);
        let first = bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let taken = first[0].0.local_addr().unwrap();
        let error = bind(taken).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::AddrInUse);
        // Nor one a single socket holds.
        let (single, _) =
            bind_udp("127.0.0.1:0".parse().unwrap(), SocketOptions::default()).unwrap();
        let error = bind(single.local_addr().unwrap()).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::AddrInUse);
        // A free port is taken as before.
        drop(first);
        assert_eq!(bind(taken).unwrap().len(), 2);
    }

    #[test]
    fn the_kernel_routes_each_connection_id_to_the_worker_its_key_picks() {
        let mut rng = ChaCha8Rng::seed_from_u64(9000);
        for workers in [2, 3, 8] {
            for _ in 0..2 {
                let key = random_key(&mut rng);
                let group = bind_reuseport_group(
                    "127.0.0.1:0".parse().unwrap(),
                    SocketOptions::default(),
                    key,
                    workers,
                )
                .unwrap();
                let server = group[0].0.local_addr().unwrap();
                for (socket, _) in &group {
                    assert_eq!(socket.local_addr().unwrap(), server);
                    socket.set_nonblocking(false).unwrap();
                    socket
                        .set_read_timeout(Some(Duration::from_secs(2)))
                        .unwrap();
                }
                // Several senders (so several 4-tuples, which the kernel's
                // hash would spread): every datagram reaches the worker its
                // ID routes to, whatever the sender's port.
                let mut buf = [0u8; 64];
                for _ in 0..3 {
                    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
                    for (worker, (receiver, _)) in group.iter().enumerate() {
                        let steering = CidSteering::new(worker, workers, key).unwrap();
                        let dcid = steering.draw(&mut rng);
                        for datagram in
                            [short_header(dcid.as_slice()), long_header(dcid.as_slice())]
                        {
                            sender.send_to(&datagram, server).unwrap();
                            let (len, _) = receiver.recv_from(&mut buf).unwrap();
                            assert_eq!(&buf[..len], &datagram[..], "worker {worker} of {workers}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn workers_out_of_range_are_an_error() {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        for workers in [0, MAX_WORKERS + 1] {
            let error = attach_cid_steering(&socket, steering_key(), workers).unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
        }
    }
}
