//! The client's file system (docs/acp.md#client-file-system): when the
//! client offers `fs/read_text_file` and `fs/write_text_file`, the file
//! tools read and write through it, so the editor's unsaved buffers count.
//! It remembers what each write replaced, for the diff shown with the
//! tool call.

use std::collections::HashMap;
use std::sync::Mutex;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, ReadTextFileRequest, SessionId as AcpSessionId, WriteTextFileRequest,
};
use camino::{Utf8Path, Utf8PathBuf};
use eonyx_agent::tools::ClientFiles;
use eonyx_core::provider::BoxFuture;

use crate::lock;

#[derive(Debug)]
pub struct ClientFs {
    cx: ConnectionTo<Client>,
    session: AcpSessionId,
    /// The text last read of each file.
    read: Mutex<HashMap<Utf8PathBuf, String>>,
    /// Each file's last write: the text before (as last read), the text
    /// written.
    written: Mutex<HashMap<Utf8PathBuf, (Option<String>, String)>>,
}

impl ClientFs {
    /// The client's file system, when it offers both reading and writing.
    pub fn offered(
        client: &ClientCapabilities,
        cx: &ConnectionTo<Client>,
        session: &AcpSessionId,
    ) -> Option<Self> {
        (client.fs.read_text_file && client.fs.write_text_file).then(|| Self {
            cx: cx.clone(),
            session: session.clone(),
            read: Mutex::new(HashMap::new()),
            written: Mutex::new(HashMap::new()),
        })
    }

    /// The text before and after the last write of `path`.
    pub fn take_change(&self, path: &std::path::Path) -> Option<(Option<String>, String)> {
        let path = Utf8Path::from_path(path)?;
        lock(&self.written).remove(path)
    }
}

impl ClientFiles for ClientFs {
    fn read_text<'a>(&'a self, path: &'a Utf8Path) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async move {
            let request = ReadTextFileRequest::new(self.session.clone(), path.as_std_path());
            let text = self
                .cx
                .send_request(request)
                .block_task()
                .await
                .map(|r| r.content)
                .map_err(|e| format!("the editor could not read it ({})", e.message))?;
            lock(&self.read).insert(path.to_owned(), text.clone());
            Ok(text)
        })
    }

    fn write_text<'a>(
        &'a self,
        path: &'a Utf8Path,
        text: &'a str,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let request = WriteTextFileRequest::new(self.session.clone(), path.as_std_path(), text);
            self.cx
                .send_request(request)
                .block_task()
                .await
                .map_err(|e| format!("the editor could not write it ({})", e.message))?;
            let before = lock(&self.read).remove(path);
            lock(&self.written).insert(path.to_owned(), (before, text.to_owned()));
            Ok(())
        })
    }
}
