% A long-lived engine: forward chaining to a fixpoint over Logic-LM logic programs, one program after
% another, recording one derivation per fact.
%
% Protocol on stdin/stdout. The caller writes a program as data terms, fact(Source, Atom) and
% rule(Source, Head, Body) with atoms a(P, Args, V), then `end_of_program.`. The engine answers one
% line per derived fact (N, P, Args, V, Source, PremiseNumbers, tab-separated), or ERROR lines when it
% refuses the program, and then END. Input terms are only ever stored as data, never called, and
% every program starts from an empty database, so no program can leave state for the next.
% Programs are Datalog (no function symbols), so the set of facts is finite and saturation ends even
% for cyclic rule sets. The caller's wall-clock limit guards against combinatorial blow-up (it kills
% and restarts the engine); no library(time) alarm here, since its helper thread can make halt/0 hang.
:- dynamic known/6.       % known(P, V, Args, N, Source, PremiseNumbers): indexed on the predicate
:- dynamic counter/1.
:- dynamic fact/2.
:- dynamic rule/3.

serve :-
    prompt(_, ''),
    set_stream(user_input, encoding(utf8)),
    set_stream(user_output, encoding(utf8)),
    repeat,
    reset,
    read_program([], Refused),
    (   Refused == eof
    ->  !, halt(0)
    ;   Refused == []
    ->  catch(( saturate, show ), Error, refuse([Error]))
    ;   refuse(Refused)
    ),
    format("END~n"),
    flush_output,
    fail.

reset :-
    retractall(known(_, _, _, _, _, _)),
    retractall(counter(_)),
    assertz(counter(0)),
    retractall(fact(_, _)),
    retractall(rule(_, _, _)).

% Refused collects every term the engine would not load; the whole program then fails.
read_program(Acc, Refused) :-
    catch(read_term(user_input, Term, []), Error, true),
    (   nonvar(Error)
    ->  read_program([Error|Acc], Refused)
    ;   Term == end_of_file
    ->  Refused = eof
    ;   Term == end_of_program
    ->  reverse(Acc, Refused)
    ;   store(Term)
    ->  read_program(Acc, Refused)
    ;   read_program([refused(Term)|Acc], Refused)
    ).

store(fact(Id, A)) :- atom(Id), valid(A), assertz(fact(Id, A)).
store(rule(Id, H, Body)) :- atom(Id), valid(H), is_list(Body), Body \== [], maplist(valid, Body),
    assertz(rule(Id, H, Body)).

valid(a(P, Args, V)) :- atom(P), is_list(Args), maplist(argument, Args), ( V == true ; V == false ).

argument(X) :- var(X), !.
argument(X) :- atom(X).

refuse(Errors) :-
    forall(member(E, Errors),
           ( message_text(E, Text), format("ERROR\t~w~n", [Text]) )).

message_text(refused(Term), Text) :- !, format(atom(Text), "refused term ~q", [Term]).
% No stream position: it counts lines across programs, and answers must not depend on what ran before.
message_text(error(syntax_error(What), _), Text) :- !, format(atom(Text), "syntax error: ~w", [What]).
message_text(E, Text) :-
    (   catch('$messages':translate_message(E, Lines, []), _, fail)
    ->  with_output_to(string(S), print_message_lines(current_output, '', Lines))
    ;   format(string(S), "~q", [E])
    ),
    split_string(S, "\n", " \t", Parts0),
    exclude(==(""), Parts0, Parts),
    atomic_list_concat(Parts, ' ', Text).

add(a(P, Args, V), Source, Premises) :-
    (   subsumed(P, V, Args)
    ->  true
    ;   retract(counter(N)), N1 is N + 1, assertz(counter(N1)),
        assertz(known(P, V, Args, N1, Source, Premises))
    ).

subsumed(P, V, Args) :- known(P, V, Old, _, _, _), subsumes_term(Old, Args), !.

holds_all([], []).
holds_all([a(P, Args, V)|As], [N|Ns]) :- known(P, V, Args, N, _, _), holds_all(As, Ns).

rounds :-
    findall(H-Id-Ns, (rule(Id, H, Body), holds_all(Body, Ns), H = a(P, Args, V), \+ subsumed(P, V, Args)), New),
    (   New == []
    ->  true
    ;   forall(member(H-Id-Ns, New), add(H, Id, Ns)),
        rounds
    ).

saturate :-
    forall(fact(Id, A), add(A, Id, [])),
    rounds.

show :-
    forall(known(P, V, Args, N, Source, Premises),
           ( numbervars(Args, 0, _),
             atomic_list_concat(Premises, ',', PremiseText),
             format("~w\t~w\t~w\t~w\t~w\t~w~n", [N, P, Args, V, Source, PremiseText]) )).
