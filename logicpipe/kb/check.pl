% logicpipe kb check: load a KB the way the engine does (into module `kb`; a module file keeps its own
% module) and report what SWI-Prolog's own tools find in it, as one JSON object on stdout:
%
%   messages        load errors and warnings, with file:line
%   predicates      every predicate the KB's files define (module files included)
%   undefined       calls to procedures that exist nowhere (library(check)'s list_undefined)
%   unreachable     clauses no call can reach: an earlier clause's head subsumes theirs and its body
%                   commits with a cut first
%   discontiguous   clauses of one predicate that are not together (SWI-Prolog's load warning)
%   duplicates      a clause that repeats an earlier one of its predicate (a variant), and predicates
%                   that a later file of the KB redefines
%   left_recursive  predicates that can call themselves before any other KB predicate (the engine
%                   tables them; `tabled` says whether the KB declared it already)
%
% Usage: swipl -q -g main -t 'halt(1)' check.pl -- FILE...   (absolute paths; Python bounds the process)

:- module(kb_check, [load_kb/1, kb_predicate/2, kb_clause/4, load_errors/1, indicator/3]).

:- use_module(library(check)).
:- use_module(library(http/json)).
:- use_module(library(lists)).
:- use_module(library(apply)).
:- use_module(library(pairs)).
:- ensure_loaded(locate).

:- dynamic kb_file/1, loading/0, load_message/5, undefined_report/1.

:- multifile user:message_hook/3.
user:message_hook(Term, Kind, Lines) :-
    loading,
    memberchk(Kind, [error, warning]),
    message_location(Term, File, Line),
    catch(with_output_to(string(Text), print_message_lines(current_output, '', Lines)), _, Text = "?"),
    assertz(load_message(Kind, File, Line, Term, Text)).
% list_undefined reports through print_message: keep its term, print nothing.
user:message_hook(check(undefined_procedures, Grouped), _, _) :-
    \+ loading,
    assertz(undefined_report(Grouped)).


main :-
    current_prolog_flag(argv, Files),
    load_kb(Files),
    catch(check:list_undefined([module_class([user])]), _, true),
    findall(M, message_dict(M), Messages),
    findall(P, predicate_dict(P), Predicates),
    findall(U, undefined_dict(U), Undefined),
    findall(U, unreachable_dict(U), Unreachable),
    findall(D, discontiguous_dict(D), Discontiguous),
    findall(D, duplicate_dict(D), Duplicates),
    findall(L, left_recursive_dict(L), LeftRecursive),
    findall(M, ( kb_module(M), M \== kb ), Modules),
    Reply = _{messages: Messages, predicates: Predicates, undefined: Undefined, unreachable: Unreachable,
              discontiguous: Discontiguous, duplicates: Duplicates, left_recursive: LeftRecursive,
              modules: Modules},
    set_stream(user_output, encoding(utf8)),
    format(user_output, "~n@@report ", []),  % own line, even after KB output without one
    json_write_dict(user_output, Reply, [width(0)]),
    nl(user_output),
    halt(0).

:- ensure_loaded(hooks).
% As the engine does, a clause that would define a hook SWI-Prolog calls by itself is dropped, with an
% error (kb check then fails where kb prove would refuse the KB).
:- multifile user:term_expansion/2.
user:term_expansion(Term, []) :-
    loading,
    prolog_load_context(source, File), \+ library_file(File),
    hook_clause(Term, Hook), refuse_hook(Hook).

% load_kb(+Files): load the KB's files into `kb` (a module file keeps its module), collecting messages.
load_kb(Files) :-
    forall(member(F, Files), ( atom_string(A, F), assertz(kb_file(A)) )),
    assertz(loading),
    forall(kb_file(F), catch(load_files(kb:F, [if(true)]), E, print_message(error, E))),
    retractall(loading).

% The load errors, as file:line: text strings (for tools that only need to know the KB still loads).
load_errors(Errors) :-
    findall(E, ( load_message(error, File, Line, _, Text),
                 split_string(Text, "", "\n ", [Clean]),
                 format(string(E), "~w:~w: ~s", [File, Line, Clean]) ), Errors).

% --- the KB's predicates ------------------------------------------------------------------

% `kb`, and each module that one of the KB's own files defines.
kb_module(kb).
kb_module(M) :- kb_file(F), module_property(M, file(F)).

% Predicates defined in a KB module; SWI-Prolog's tabling helpers ('$wrap$p', '$tabled') are its own.
kb_predicate(M, H) :-
    kb_module(M),
    current_predicate(M:N/A),
    \+ sub_atom(N, 0, _, _, '$'),
    functor(H, N, A),
    \+ predicate_property(M:H, imported_from(_)),
    \+ predicate_property(M:H, built_in).

predicate_dict(_{module: M, name: N, arity: A, clauses: C, file: File, dynamic: Dyn, tabled: Tab,
                 exported: Exp}) :-
    kb_predicate(M, H),
    functor(H, N, A),
    ( predicate_property(M:H, number_of_clauses(C)) -> true ; C = 0 ),
    ( predicate_property(M:H, file(File)) -> true ; File = "" ),
    flag_of(M:H, dynamic, Dyn),
    flag_of(M:H, tabled, Tab),
    flag_of(M:H, exported, Exp).

flag_of(G, Property, true) :- predicate_property(G, Property), !.
flag_of(_, _, false).

% Clauses with their file and line, in source order.
kb_clause(M:H, Body, File, Line) :-
    \+ predicate_property(M:H, foreign),
    catch(clause(M:H, Body, Ref), _, fail),
    clause_where(Ref, File, Line).

clause_where(Ref, File, Line) :-
    ( clause_property(Ref, file(File)) -> true ; File = '' ),
    ( clause_property(Ref, line_count(Line)) -> true ; Line = 0 ).

indicator(M, H, Text) :-
    functor(H, N, A),
    ( M == kb -> format(string(Text), "~q/~w", [N, A]) ; format(string(Text), "~q:~q/~w", [M, N, A]) ).

% --- load messages ------------------------------------------------------------------------

message_dict(_{kind: Kind, file: File, line: Line, message: Text}) :-
    load_message(Kind, File, Line, Term, Text0),
    \+ categorised(Term),
    split_string(Text0, "", "\n ", [Text]).

discontiguous_dict(_{predicate: Text, file: File, line: Line}) :-
    load_message(_, File, Line, discontiguous(PI, _), _),
    pi_text(PI, Text).

% Messages that a list of their own reports.
categorised(discontiguous(_, _)).
categorised(redefined_procedure(_, _)).
categorised(error(permission_error(modify, static_procedure, _), _)).

pi_text(M:N/A, Text) :- !, ( M == kb -> format(string(Text), "~q/~w", [N, A]) ; format(string(Text), "~q:~q/~w", [M, N, A]) ).
pi_text(N/A, Text) :- format(string(Text), "~q/~w", [N, A]).

% --- undefined procedures (library(check)) -------------------------------------------------

undefined_dict(_{predicate: Text, file: File, line: Line, caller: Caller}) :-
    undefined_report(Grouped),
    member(PI-Places, Grouped),
    pi_text(PI, Text),
    member(clause_term_position(Ref, _), Places),
    clause_where(Ref, File, Line),
    kb_file(File),
    clause(Head, _, Ref),
    strip_module(Head, M, H),
    indicator(M, H, Caller).

% --- unreachable clauses -------------------------------------------------------------------

unreachable_dict(_{predicate: Text, file: File, line: Line, shadowed_by: Line0}) :-
    kb_predicate(M, H),
    findall(c(H, B, F, L), kb_clause(M:H, B, F, L), Clauses),
    append(_, [c(H0, B0, _, Line0)|Later], Clauses),
    commits_first(B0),
    member(c(H1, _, File, Line), Later),
    subsumes_term(H0, H1),
    \+ ( append(_, [c(Hx, Bx, _, Lx)|_], Clauses), Lx < Line0, commits_first(Bx), subsumes_term(Hx, H1) ),
    indicator(M, H, Text).

commits_first(B) :- B == !, !.
commits_first((A, _)) :- A == !.

% --- duplicate definitions -----------------------------------------------------------------

duplicate_dict(_{predicate: Text, file: File, line: Line, first_line: First, kind: "clause"}) :-
    kb_predicate(M, H),
    findall(Hash-(F-L), ( kb_clause(M:H, B, F, L), variant_sha1(H-B, Hash) ), Keyed),
    msort_keys(Keyed, Grouped),
    member(_-[_-First|Repeats], Grouped),
    member(File-Line, Repeats),
    indicator(M, H, Text).
duplicate_dict(_{predicate: Text, file: File, line: Line, first_line: 0, kind: "redefined"}) :-
    load_message(_, File, Line, redefined_procedure(_, PI), _),
    pi_text(PI, Text).
duplicate_dict(_{predicate: Text, file: File, line: Line, first_line: 0, kind: "builtin"}) :-
    load_message(_, File, Line, error(permission_error(modify, static_procedure, PI), _), _),
    pi_text(PI, Text).

% Group Hash-Where pairs by hash, each group's places in source order.
msort_keys(Keyed, Grouped) :-
    keysort(Keyed, Sorted),
    group_pairs_by_key(Sorted, Grouped0),
    include([_-[_, _|_]]>>true, Grouped0, Grouped1),
    maplist([K-Ws, K-Sorted1]>>msort(Ws, Sorted1), Grouped1, Grouped).

% --- left recursion ------------------------------------------------------------------------

left_recursive_dict(_{predicate: Text, file: File, line: Line, via: Via, tabled: Tabled}) :-
    kb_predicate(M, H),
    functor(H, N, A),
    left_path(M:N/A, Path),
    indicator(M, H, Text),
    ( Path = [_, Next|_] -> true ; Next = M:N/A ),
    once(( kb_clause(M:H, B, File, Line), first_calls(M, B, Calls, _), memberchk(Next, Calls)
         ; File = "", Line = 0 )),
    maplist(path_text, Path, Via),
    flag_of(M:H, tabled, Tabled).

path_text(M:N/A, Text) :- pi_text(M:N/A, Text).

% A shortest cycle of leftmost calls from P back to P, as [P, ..., P] (breadth first, so each predicate
% is expanded once).
left_path(P, Path) :-
    left_step(P, Firsts),
    bfs(P, [], Firsts, [], Found),
    reverse(Found, Back),
    Path = [P|Back], !.

bfs(P, _, Frontier, _, [P|Trail]) :-
    member(P-Trail, Frontier), !.
bfs(P, Seen, Frontier, Next, Path) :-
    Frontier = [Q-Trail|Rest], !,
    (   memberchk(Q, Seen)
    ->  bfs(P, Seen, Rest, Next, Path)
    ;   left_step(Q, Steps),
        findall(R-[Q|Trail], member(R-[], Steps), New),
        append(Next, New, Next1),
        bfs(P, [Q|Seen], Rest, Next1, Path)
    ).
bfs(P, Seen, [], Next, Path) :-
    Next \== [],
    bfs(P, Seen, Next, [], Path).

% The KB predicates that a clause of P may call first, each as Q-[].
left_step(M:N/A, Steps) :-
    functor(H, N, A),
    findall(Q-[], ( kb_clause(M:H, B, _, _), first_calls(M, B, Calls, _), member(Q, Calls),
                    \+ ( Q == M:N/A, leftmost(B, G), shrinking(H, G) ) ),
            Steps0),
    sort(Steps0, Steps).

% A call on a proper part of one of the head's own arguments ends once that argument is bound: no left
% recursion (the engine's shrinking/2, which leaves such a predicate untabled).
leftmost(B, _) :- var(B), !, fail.
leftmost((A, _), G) :- !, leftmost(A, G).
leftmost(G, G).

shrinking(H, G) :-
    functor(H, N, A), functor(G, N, A),
    between(1, A, I), arg(I, H, Part), compound(Part), arg(I, G, Sub),
    sub_term(S, Part), S \== Part, S == Sub, !.

% first_calls(+Module, +Body, -Calls, -Passes): the KB predicates Body can call before any other KB
% predicate; Passes is true when Body can succeed without calling one (then what follows comes first).
first_calls(_, B, [], true) :- var(B), !.
first_calls(_, M:B, Calls, Passes) :- !, first_calls(M, B, Calls, Passes).
first_calls(M, (A, B), Calls, Passes) :- !,
    first_calls(M, A, CA, PA),
    (   PA == true
    ->  first_calls(M, B, CB, Passes), append(CA, CB, Calls)
    ;   Calls = CA, Passes = false
    ).
first_calls(M, (A ; B), Calls, Passes) :- !,
    first_calls(M, A, CA, PA), first_calls(M, B, CB, PB),
    append(CA, CB, Calls),
    ( ( PA == true ; PB == true ) -> Passes = true ; Passes = false ).
first_calls(M, (C -> T), Calls, Passes) :- !, first_calls(M, (C, T), Calls, Passes).
first_calls(M, (C *-> T), Calls, Passes) :- !, first_calls(M, (C, T), Calls, Passes).
first_calls(M, G, Calls, true) :- inner_goal(G, Inner), !, first_calls(M, Inner, Calls, _).
first_calls(M, G, Calls, Passes) :- transparent_goal(G, Inner), !, first_calls(M, Inner, Calls, Passes).
first_calls(M, G, [M:N/A], false) :-
    callable(G), functor(G, N, A), kb_predicate(M, G0), functor(G0, N, A), !.
first_calls(_, _, [], true).

inner_goal(\+ G, G).
inner_goal(findall(_, G, _), G).
inner_goal(findall(_, G, _, _), G).
inner_goal(forall(G, _), G).
inner_goal(aggregate_all(_, G, _), G).
inner_goal(ignore(G), G).
transparent_goal(call(G), G).
transparent_goal(once(G), G).
transparent_goal(catch(G, _, _), G).
