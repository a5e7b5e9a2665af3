% Where a load error or warning points (file and line), for the engine and for `kb check` alike.

% nonvar: an error whose context is unbound (a missing file's existence_error) would otherwise bind it
% to file(_, _, _, _), leaving File and Line unbound, and the reply could not be written.
message_location(error(_, Context), File, Line) :- nonvar(Context), Context = file(File, Line, _, _), !.
message_location(_, File, Line) :- source_location(File, Line), !.
message_location(_, '', 0).
