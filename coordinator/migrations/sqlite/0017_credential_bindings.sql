-- What a host is bound to at enrollment: its labels (a JSON array) and its address ('' is the
-- address its connection comes from). Its hello cannot change them.
ALTER TABLE host_credentials ADD COLUMN labels TEXT NOT NULL DEFAULT '[]';
ALTER TABLE host_credentials ADD COLUMN address TEXT NOT NULL DEFAULT '';
