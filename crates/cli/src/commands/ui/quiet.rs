//! Typing while a turn runs: the terminal does not echo it (it would land in
//! the middle of the streamed answer); the keys stay queued and show up in
//! the next prompt's line. Ctrl-C still interrupts (signals stay on).
//!
//! Invariant: echo is back on whenever eonyx leaves, also through the
//! second-Ctrl-C exit ([`restore`]).

/// Echo off until dropped (a no-op off a terminal or off unix).
pub struct QuietTyping {
    #[cfg(unix)]
    saved: Option<nix::sys::termios::Termios>,
}

#[cfg(unix)]
static SAVED: std::sync::Mutex<Option<nix::sys::termios::Termios>> = std::sync::Mutex::new(None);

impl QuietTyping {
    #[cfg(unix)]
    pub fn start() -> Self {
        use nix::sys::termios::{LocalFlags, SetArg, tcgetattr, tcsetattr};
        let stdin = std::io::stdin();
        let Ok(saved) = tcgetattr(&stdin) else {
            return Self { saved: None };
        };
        let mut quiet = saved.clone();
        quiet.local_flags.remove(LocalFlags::ECHO);
        if tcsetattr(&stdin, SetArg::TCSANOW, &quiet).is_err() {
            return Self { saved: None };
        }
        if let Ok(mut s) = SAVED.lock() {
            *s = Some(saved.clone());
        }
        Self { saved: Some(saved) }
    }

    #[cfg(not(unix))]
    pub fn start() -> Self {
        Self {}
    }
}

impl Drop for QuietTyping {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(saved) = self.saved.take() {
            let _ = nix::sys::termios::tcsetattr(
                std::io::stdin(),
                nix::sys::termios::SetArg::TCSANOW,
                &saved,
            );
            if let Ok(mut s) = SAVED.lock() {
                *s = None;
            }
        }
    }
}

/// Put echo back if a turn had turned it off (for exits that skip drops).
pub fn restore() {
    #[cfg(unix)]
    if let Ok(mut s) = SAVED.lock()
        && let Some(saved) = s.take()
    {
        let _ = nix::sys::termios::tcsetattr(
            std::io::stdin(),
            nix::sys::termios::SetArg::TCSANOW,
            &saved,
        );
    }
}
