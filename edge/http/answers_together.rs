//! Answers written together: a connection that has just read a request lets every other
//! connection with work ready take its turn before it writes its answer, so that under load
//! the answers of one turn of the runtime leave back to back.
//!
//! Why: on loopback and in a virtual machine, most of what a small answer costs the sender is
//! waking the client that waits for it (the receiving path runs in the sender's context, and a
//! wake-up of a sleeping thread on another CPU is an inter-processor interrupt, a trip through
//! the hypervisor). A profile of `GET /hello-world-user` under `wrk` showed that wake-up as
//! 15% of lps's CPU: one per answer, because answers left one at a time, each after the client
//! had gone back to sleep. Written back to back, the first wakes the client and the rest find
//! it awake. Redis writes its replies the same way, all at once before its event loop sleeps,
//! and Netty's `FlushConsolidationHandler` for the same reason.
//!
//! How: the first write after a read yields once with [`tokio::task::yield_now`], which tokio
//! wakes again only when its worker has run every other ready task and looked for new I/O
//! (before it would sleep). An idle server therefore writes at once: the yield costs one more
//! poll of the connection, not a wait. A large answer written in many pieces yields only before
//! its first; what is written after it (the rest of a body, the next answers of a pipelined
//! batch) goes out as before.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A connection's stream whose first write after each read waits for the runtime's turn.
pub struct AnswersTogether<S> {
    stream: S,
    /// A request was read since the last write: the next write yields first.
    read_since_write: bool,
}

impl<S> AnswersTogether<S> {
    pub fn new(stream: S) -> Self {
        Self {
            stream,
            read_since_write: false,
        }
    }

    /// Pending once after each read (the connection is woken again at the end of the
    /// runtime's turn); ready otherwise.
    fn poll_turn(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if !self.read_since_write {
            return Poll::Ready(());
        }
        self.read_since_write = false;
        // The first poll of a yield registers the wake-up and is pending; the future itself
        // holds nothing once polled, so it is not kept.
        std::pin::pin!(tokio::task::yield_now()).poll(cx)
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for AnswersTogether<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let read = Pin::new(&mut self.stream).poll_read(cx, buf);
        if matches!(read, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.read_since_write = true;
        }
        read
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for AnswersTogether<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        std::task::ready!(self.poll_turn(cx));
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        std::task::ready!(self.poll_turn(cx));
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::task::Waker;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    fn write(stream: &mut AnswersTogether<tokio::io::DuplexStream>, bytes: &[u8]) -> Poll<usize> {
        let mut cx = Context::from_waker(Waker::noop());
        Pin::new(stream)
            .poll_write(&mut cx, bytes)
            .map(|written| written.unwrap())
    }

    #[tokio::test]
    async fn only_the_first_write_after_a_read_waits_for_the_turn() {
        let (mut client, server) = tokio::io::duplex(1024);
        let mut stream = AnswersTogether::new(server);
        // Nothing read yet (a server's first words, say): written at once.
        assert_eq!(write(&mut stream, b"hello"), Poll::Ready(5));

        client.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
        let mut request = [0; 64];
        let read = stream.read(&mut request).await.unwrap();
        assert_eq!(read, 18);
        // The answer waits one turn, then goes out; its rest does not wait again.
        assert_eq!(write(&mut stream, b"HTTP/1.1 200 OK\r\n"), Poll::Pending);
        assert_eq!(write(&mut stream, b"HTTP/1.1 200 OK\r\n"), Poll::Ready(17));
        assert_eq!(write(&mut stream, b"body"), Poll::Ready(4));

        let mut received = vec![0; 5 + 17 + 4];
        client.read_exact(&mut received).await.unwrap();
        assert_eq!(received, b"helloHTTP/1.1 200 OK\r\nbody");
    }

    #[tokio::test]
    async fn a_read_of_nothing_does_not_hold_the_next_write() {
        let (client, server) = tokio::io::duplex(1024);
        let mut stream = AnswersTogether::new(server);
        drop(client);
        let mut request = [0; 8];
        assert_eq!(stream.read(&mut request).await.unwrap(), 0);
        // The peer is gone: the write fails at once instead of waiting a turn first.
        let mut cx = Context::from_waker(Waker::noop());
        let written = Pin::new(&mut stream).poll_write(&mut cx, b"late");
        assert!(matches!(written, Poll::Ready(Err(_))));
    }
}
