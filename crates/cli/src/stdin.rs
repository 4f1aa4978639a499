//! Reading piped stdin: the whole of it (`run`'s prompt) or line by line
//! (a batch run). The REPL's terminal input is not read here.

use std::io::{self, BufRead, Read};

use tokio::sync::mpsc;

/// All of stdin, as text.
pub fn read_all() -> io::Result<String> {
    let mut s = String::new();
    io::stdin().read_to_string(&mut s)?;
    Ok(s)
}

/// Lines of stdin, read on a blocking thread so Ctrl-C stays responsive.
/// The thread ends at end of input, on a read error (sent as the last
/// item) or when the receiver is dropped.
pub fn lines() -> mpsc::UnboundedReceiver<io::Result<String>> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in io::stdin().lock().lines() {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}
