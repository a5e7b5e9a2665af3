% What the engine (engine.pl) and kb check (check.pl) both refuse in a KB's source as they load it: a
% clause that would define a hook SWI-Prolog calls by itself, unchecked, outside the sandbox. Each
% program declares its own `loading/0` (true while the KB's files load); this file adds the
% term_expansion that drops such a clause with an error at its file and line.

% hook_clause(+Term, -Hook): a clause for another module's predicate (user:portray/1,
% user:exception/3, prolog:message//1, sandbox:safe_primitive/1, ...), or a goal_expansion/2,4, which
% would rewrite the KB's bodies after the sandbox did. (The KB's own term_expansion/2,4 run at load, and
% what they make is rewritten still.)
hook_clause(Term, Hook) :-
    nonvar(Term), Term \= (:- _), Term \= (?- _),
    (   Term = (H :- _) -> true ; Term = (H --> _) -> true ; H = Term ),
    nonvar(H),
    prolog_load_context(module, Here),
    (   H = M:H1, atom(M), M \== Here
    ->  callable(H1), functor(H1, N, A), Hook = M:N/A
    ;   memberchk(Here, [user, system, prolog, sandbox])    % a directive made the source module one of these
    ->  callable(H), functor(H, N, A), Hook = Here:N/A
    ;   callable(H), functor(H, goal_expansion, A), memberchk(A, [2, 4]), Hook = goal_expansion/A
    ).

refuse_hook(Hook) :-
    print_message(error, format("a KB clause for ~q is refused: SWI-Prolog would call it outside the sandbox", [Hook])).

% SWI-Prolog's own libraries, which a KB may load (use_module(library(...))), are not the KB's code; every
% other file it loads (consult, ensure_loaded, include, a module of its own) is.
library_file(File) :-
    current_prolog_flag(home, Home), atom_concat(Home, '/', Prefix), sub_atom(File, 0, _, _, Prefix).
