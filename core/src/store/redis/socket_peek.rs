//! What waits unread on a socket, seen without reading it: the one check the blocking lane and the
//! pipelined connection make before writing a call, to find a close the server or a proxy already sent.

/// What a one-byte, non-blocking peek found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Peeked {
    /// Nothing to read: the connection is open and idle.
    Nothing,
    /// Bytes wait to be read (replies not taken yet).
    Bytes,
    /// The peer closed (FIN) or reset (RST) the connection.
    Closed,
}

/// Peeks at `socket` (one `recv(MSG_PEEK | MSG_DONTWAIT)`, no byte consumed).
#[cfg(unix)]
pub(crate) fn peek(socket: std::os::fd::RawFd) -> Peeked {
    let mut byte = 0u8;
    // SAFETY: a one-byte peek into a local buffer on a descriptor the caller keeps open.
    let read = unsafe {
        libc::recv(
            socket,
            (&mut byte as *mut u8).cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    match read {
        0 => Peeked::Closed,
        n if n > 0 => Peeked::Bytes,
        _ => match std::io::Error::last_os_error().kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted => Peeked::Nothing,
            _ => Peeked::Closed,
        },
    }
}

/// Without a non-blocking peek, a close shows on the next write or read instead.
#[cfg(not(unix))]
pub(crate) fn peek<T>(_: T) -> Peeked {
    Peeked::Nothing
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;

    #[test]
    fn an_idle_socket_bytes_and_a_close_are_told_apart() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        assert_eq!(peek(client.as_raw_fd()), Peeked::Nothing);
        server.write_all(b"+OK\r\n").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(peek(client.as_raw_fd()), Peeked::Bytes);
        drop(server);
        drop(listener);
        let mut client = client;
        let mut sink = [0u8; 5];
        std::io::Read::read_exact(&mut client, &mut sink).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(peek(client.as_raw_fd()), Peeked::Closed);
    }
}
