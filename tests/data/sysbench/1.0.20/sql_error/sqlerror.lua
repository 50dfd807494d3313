-- a user's script whose SQL names a table that does not exist
require("oltp_common")

function prepare_statements()
end

function event()
   con:query("SELECT c FROM no_such_table WHERE id=1")
end
