//! Pipe tables: only the outermost table is written as one; a nested
//! table's rows and cells become spaces in its cell.

use super::Writer;

impl Writer<'_> {
    /// Inside a cell of the outermost table (where a line break would end
    /// the row).
    pub(super) fn in_cell(&self) -> bool {
        self.tables.first().is_some_and(|t| t.cell_open)
    }

    pub(super) fn start_row(&mut self) {
        match self.tables.len() {
            0 => self.request_break(1),
            1 => {
                self.end_row();
                self.request_break(1);
            }
            _ => self.space = true,
        }
    }

    pub(super) fn start_cell(&mut self) {
        match self.tables.len() {
            1 => {}
            _ => {
                self.space = true;
                return;
            }
        }
        let Some(t) = self.tables.first_mut() else {
            return;
        };
        t.cell_open = false;
        let first = t.cells == 0;
        if first {
            self.request_break(1);
            self.content("|");
        }
        self.out.push(' ');
        self.space = false;
        if let Some(t) = self.tables.first_mut() {
            t.cell_open = true;
        }
    }

    pub(super) fn end_cell(&mut self) {
        if self.tables.len() != 1 {
            self.space = true;
            return;
        }
        if let Some(t) = self.tables.first_mut()
            && t.cell_open
        {
            t.cell_open = false;
            t.cells += 1;
            self.space = false;
            self.out.push_str(" |");
        }
    }

    /// Ends the outermost table's row: the header's separator after the
    /// first one.
    pub(super) fn end_row(&mut self) {
        if self.tables.len() != 1 {
            return;
        }
        self.end_cell();
        let Some(t) = self.tables.first_mut() else {
            return;
        };
        if t.cells == 0 {
            return;
        }
        let (cells, first) = (t.cells, t.rows == 0);
        t.rows += 1;
        t.cells = 0;
        if first {
            self.out.push('\n');
            self.push_prefix(0..self.containers.len());
            self.out.push('|');
            for _ in 0..cells {
                self.out.push_str(" --- |");
            }
        }
        self.breaks = self.breaks.max(1);
    }
}
