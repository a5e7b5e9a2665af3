% logicpipe kb engine: loads a trusted knowledge base into module `kb`, lets SWI-Prolog find a goal's
% answers natively (cut, if-then-else, negation, aggregates, exceptions and tabling all behave as in
% plain SWI-Prolog), then explains each answer afterwards with a bounded meta-interpreter guided by
% native calls. One request per stdin line (JSON), one reply per stdout line prefixed with "@@reply "
% (KB code may print too; Python skips other lines).
%
% Sandbox: the KB's own code is trusted, but every place where it calls a term it did not write
% (a variable body goal, call/N, the goal arguments of forall, findall, maplist, ...) is rewritten at
% load time into checked/1 or lp_closure/N, which check the term against the whitelist when it runs.
% A goal from Python goes through the same check, so nothing a model writes can reach anything but the
% KB's predicates and the pure builtins Python sends with the load request.

:- use_module(library(http/json)).
:- use_module(library(time)).
:- use_module(library(lists)).
:- use_module(library(apply)).
:- use_module(library(aggregate)).
:- use_module(library(solution_sequences)).

:- dynamic load_message/4, display_name/2, kb_pred/2, percept_pred/2, allowed_builtin/2, loading/0,
           auto_tabled/2, found_answer/1.
:- discontiguous handle/3.

:- multifile user:message_hook/3.
% While loading, errors and warnings are collected (with file:line) instead of printed.
user:message_hook(Term, Kind, Lines) :-
    loading,
    memberchk(Kind, [error, warning]),
    message_location(Term, File, Line),
    catch(with_output_to(string(Text), print_message_lines(current_output, '', Lines)), _, Text = "?"),
    assertz(load_message(Kind, File, Line, Text)).

message_location(error(_, file(File, Line, _, _)), File, Line) :- !.
message_location(_, File, Line) :- source_location(File, Line), !.
message_location(_, '', 0).

main :-
    set_stream(user_input, encoding(utf8)),
    set_stream(user_output, encoding(utf8)),
    repeat,
    read_line_to_string(user_input, Line),
    (   Line == end_of_file
    ->  halt(0)
    ;   catch(( atom_json_dict(Line, Request, [value_string_as(string)]),
                ( handle(Request.op, Request, Reply) -> true ; Reply = _{error: "the request failed"} ) ),
              Error, error_reply(Error, Reply)),
        reply(Reply),
        fail
    ).

reply(Reply) :-
    with_output_to(string(Text), json_write_dict(current_output, Reply, [width(0)])),
    format(user_output, "~n@@reply ~s~n", [Text]),   % own line, even after KB output without one
    flush_output(user_output).

error_reply(Error, _{error: Text}) :-
    message_text(Error, Text).

message_text(refused(Goal), Text) :- !,
    format(string(Text), "refused: ~w is neither a predicate of the KB nor an allowed pure builtin", [Goal]).
message_text(Error, Text) :-
    catch(message_to_codes(Error, Codes), _, fail), !,
    string_codes(Text0, Codes),
    split_string(Text0, "", "\n ", [Text]).
message_text(Error, Text) :-
    format(string(Text), "~q", [Error]).

message_to_codes(Error, Codes) :-
    '$messages':translate_message(Error, Lines, []),
    with_output_to(codes(Codes), print_message_lines(current_output, '', Lines)).

% --- loading --------------------------------------------------------------------------------

handle("load", Request, _{ok: true, messages: Messages, predicates: Preds, tabled: Tabled, operators: Ops}) :-
    forall(member([N, A], Request.builtins), ( atom_string(Name, N), assertz(allowed_builtin(Name, A)) )),
    forall(member(F, Request.files),
           ( atom_string(Path, F.path), atom_string(Name, F.name), assertz(display_name(Path, Name)) )),
    assertz(loading),
    forall(member(F, Request.files), catch(load_kb_file(F), E, print_message(error, E))),
    retractall(loading),
    forall(own_predicate(N, A), assertz(kb_pred(N, A))),
    sandbox_asserted,
    table_left_recursion,
    table_recursive_callers,
    findall(M, load_message_dict(M), Messages),
    findall(P, predicate_dict(P), Preds),
    findall(S, ( auto_tabled(N, A), format(string(S), "~w/~w", [N, A]) ), Tabled),
    findall([P, T, S], kb_operator(P, T, S), Ops).

% load_kb_file(+File): from source, or through the compiled cache Python keeps by content hash: a
% copy of the source (`source`, so clauses keep its lines) compiled to `qlf` once, then loaded from it.
load_kb_file(F) :-
    atom_string(Path, F.path),
    (   get_dict(qlf, F, QlfString), QlfString \== null
    ->  atom_string(Source, F.source), atom_string(Qlf, QlfString), atom_string(Name, F.name),
        assertz(display_name(Source, Name)),
        (   F.compile == true -> qcompile(kb:Source) ; load_files(kb:Qlf, []) )
    ;   load_files(kb:Path, [if(true)])
    ).

% The KB's own predicates, also those of a KB written as a module (imported into kb from its file);
% tabling internals ('$tabled'/2, '$wrap$p'/N) and library predicates are not the KB's.
own_predicate(N, A) :-
    current_predicate(kb:N/A),
    \+ sub_atom(N, 0, _, _, '$'),
    \+ sub_atom(N, 0, _, _, '__aux_'),        % library(yall)'s and others' helper predicates
    functor(H, N, A),
    (   predicate_property(kb:H, imported_from(M))
    ->  module_property(M, file(File)), display_name(File, _)
    ;   true
    ).

kb_operator(P, T, S) :-
    current_op(P, T, kb:Name),
    \+ current_op(P, T, user:Name),
    atom_string(Name, S).

load_message_dict(_{kind: Kind, file: Name, line: Line, message: Text}) :-
    load_message(Kind, File, Line, Text0),
    shown_file(File, Name),
    split_string(Text0, "", "\n ", [Text]).

shown_file(File, Name) :- display_name(File, Name), !.
shown_file(File, File).

predicate_dict(_{name: N, arity: A, clauses: C, file: File, dynamic: Dyn, last_line: Last, tabled: Tab}) :-
    kb_pred(N, A),
    functor(H, N, A),
    ( predicate_property(kb:H, number_of_clauses(C)) -> true ; C = 0 ),
    ( predicate_property(kb:H, file(F)) -> shown_file(F, File) ; File = "" ),
    ( predicate_property(kb:H, dynamic) -> Dyn = true ; Dyn = false ),
    ( predicate_property(kb:H, tabled) -> Tab = true ; Tab = false ),
    (   C > 0, nth_clause(kb:H, C, R), clause_property(R, line_count(Last)) -> true   % the last clause's
    ;   Last = 0 ).

handle("facts", Request, _{facts: Facts}) :-
    Max = Request.per_predicate,
    findall(S, ( kb_pred(N, A), A > 0, functor(H, N, A),
                 limit(Max, clause(kb:H, true)),
                 numbervars(H, 0, _), text(H, S) ),
            Facts).

% --- left recursion ---------------------------------------------------------------------------
% A predicate that can call itself again before anything else in its clause ran (p :- p, ... or
% through other predicates' first goals) never ends in plain SWI-Prolog; tabling it makes its answers
% complete and finite. Predicates with a cut are left alone: tabling changes what a cut cuts.

table_left_recursion :-
    forall(( kb_pred(N, A), functor(H, N, A),
             \+ predicate_property(kb:H, number_of_rules(0)),      % facts only: nothing to recurse
             \+ predicate_property(kb:H, tabled), \+ predicate_property(kb:H, dynamic),
             \+ has_cut(H),
             reaches(left_edge, N/A, N/A) ),
           ( table_home(N, A), assertz(auto_tabled(N, A)) )).

% Tables N/A where it is defined: in kb, or in the module of a module KB that kb imports it from
% (tabling kb:N/A there would replace the import with an empty definition).
table_home(N, A) :-
    functor(H, N, A),
    (   predicate_property(kb:H, imported_from(M)) -> table(M:N/A) ; table(kb:N/A) ).

% A recursive predicate that calls an automatically tabled one is tabled too: the tabled predicate's
% answers come in the table's order, not the clauses', so a depth-first recursion over them (such as
% reachable/2 over a symmetric linked/2) could run into a cycle before its first answer.
table_recursive_callers :-
    (   kb_pred(N, A), functor(H, N, A),
        \+ predicate_property(kb:H, number_of_rules(0)),
        \+ predicate_property(kb:H, tabled), \+ predicate_property(kb:H, dynamic),
        \+ has_cut(H),
        call_edge(N/A, M/B), auto_tabled(M, B),
        reaches(call_edge, N/A, N/A)
    ->  table_home(N, A), assertz(auto_tabled(N, A)),
        table_recursive_callers
    ;   true
    ).

% An edge N/A -> M/B: a clause of N/A calls the KB predicate M/B anywhere in its body (call_edge) or
% as its first goal (left_edge).
call_edge(From, To) :- body_edge(sub_goal, From, To).
left_edge(From, To) :- body_edge(first_goal, From, To).

body_edge(Pick, N/A, M/B) :-
    functor(H, N, A),
    clause(kb:H, Body),
    Body \== true,
    call(Pick, Body, G),
    callable(G), \+ G = _:_,
    functor(G, M, B),
    kb_pred(M, B).

has_cut(H) :- clause(kb:H, Body), sub_goal(Body, G), G == !, !.

sub_goal(V, _) :- var(V), !, fail.
sub_goal(B, B).
sub_goal((A, B), G) :- ( sub_goal(A, G) ; sub_goal(B, G) ).
sub_goal((A ; B), G) :- ( sub_goal(A, G) ; sub_goal(B, G) ).
sub_goal((A -> B), G) :- ( sub_goal(A, G) ; sub_goal(B, G) ).
sub_goal((A *-> B), G) :- ( sub_goal(A, G) ; sub_goal(B, G) ).
sub_goal(\+ A, G) :- sub_goal(A, G).
sub_goal(findall(_, A, _), G) :- sub_goal(A, G).
sub_goal(forall(A, B), G) :- ( sub_goal(A, G) ; sub_goal(B, G) ).
sub_goal(aggregate_all(_, A, _), G) :- sub_goal(A, G).

first_goal(V, _) :- var(V), !, fail.
first_goal((A, _), G) :- !, first_goal(A, G).
first_goal((A ; B), G) :- !, ( first_goal(A, G) ; first_goal(B, G) ).
first_goal((A -> _), G) :- !, first_goal(A, G).
first_goal((A *-> _), G) :- !, first_goal(A, G).
first_goal(\+ A, G) :- !, first_goal(A, G).
first_goal(G, G).

% reaches(+Edge, +From, +To): To is reachable from From over call(Edge, P, Q) steps (breadth first).
reaches(Edge, From, To) :- reaches(Edge, [From], [From], To).

reaches(Edge, [P|Queue], Seen, To) :-
    findall(Q, call(Edge, P, Q), Qs0),
    sort(Qs0, Qs),
    (   memberchk(To, Qs) -> true
    ;   subtract(Qs, Seen, New),
        append(Seen, New, Seen1),
        append(Queue, New, Queue1),
        reaches(Edge, Queue1, Seen1, To)
    ).

% --- the sandbox --------------------------------------------------------------------------------

:- multifile user:term_expansion/2.
user:term_expansion(Term, Expanded) :-
    loading,
    prolog_load_context(source, File), display_name(File, _),
    expand_clause(Term, Expanded).

expand_clause((Head :- Body), (Head :- Safe)) :- !,
    safe_body(trusted, Body, Safe).
expand_clause((Head --> Body), Clause) :-
    dcg_translate_rule((Head --> Body), (Head1 :- Body1)),
    safe_body(trusted, Body1, Safe),
    Clause = (Head1 :- Safe).

% safe_body(+Mode, +Goal, -Safe): Goal with every call of an unknown term made a checked call.
% Mode trusted: the KB's own code (its literal goals run as written). Mode checked: a goal from
% outside, or a term reaching a meta-call at run time: every literal goal must be allowed too.
safe_body(_, G, user:checked(G)) :- var(G), !.
safe_body(trusted, user:checked(G), user:checked(G)) :- !.
safe_body(Mode, M:G, Safe) :- !,
    (   Mode == trusted -> Safe = M:G
    ;   M == kb -> safe_body(Mode, G, Safe)
    ;   throw(refused(M:G))
    ).
safe_body(Mode, (A, B), (SA, SB)) :- !, safe_body(Mode, A, SA), safe_body(Mode, B, SB).
safe_body(Mode, (A ; B), (SA ; SB)) :- !, safe_body(Mode, A, SA), safe_body(Mode, B, SB).
safe_body(Mode, (A -> B), (SA -> SB)) :- !, safe_body(Mode, A, SA), safe_body(Mode, B, SB).
safe_body(Mode, (A *-> B), (SA *-> SB)) :- !, safe_body(Mode, A, SA), safe_body(Mode, B, SB).
safe_body(Mode, \+ A, \+ SA) :- !, safe_body(Mode, A, SA).
safe_body(_, !, !) :- !.
safe_body(trusted, G, user:safe_assert(How, Clause, Rest)) :-   % clauses the KB asserts: sandboxed too
    G =.. [How, Clause|Rest], memberchk(How, [assert, asserta, assertz]), !.
safe_body(Mode, apply(C, Args), Safe) :- !,      % apply/2's closure is not declared a goal argument
    (   Mode == checked -> throw(refused(apply/2))
    ;   var(C) -> Safe = user:lp_apply(C, Args)
    ;   Safe = apply(C, Args)
    ).
safe_body(Mode, G, Safe) :-
    (   callable(G) -> true ; throw(error(type_error(callable, G), _)) ),
    functor(G, N, A),
    (   Mode == checked, \+ allowed(N, A) -> throw(refused(N/A)) ; true ),
    (   \+ kb_local(N, A), predicate_property(user:G, meta_predicate(Spec))
    ->  G =.. [N|Args], Spec =.. [_|Specs],
        maplist(safe_arg(Mode), Specs, Args, SafeArgs),
        Safe =.. [N|SafeArgs]
    ;   Safe = G
    ).

allowed(N, A) :- kb_pred(N, A), !.
allowed(N, A) :- percept_pred(N, A), !.
allowed(N, A) :- allowed_builtin(N, A).

% Defined by the KB itself (its meta-arguments are then the KB's business, checked where it calls them).
kb_local(N, A) :- current_predicate(kb:N/A), functor(H, N, A), \+ predicate_property(kb:H, imported_from(_)).

safe_arg(Mode, 0, G, Safe) :- !, safe_body(Mode, G, Safe).
safe_arg(Mode, N, C, Safe) :- integer(N), !,
    (   var(C) -> Safe = user:lp_closure(C)
    ;   Mode == trusted -> safe_lambda(C, Safe)
    ;   Safe = user:lp_closure(C)
    ).

% A library(yall) lambda in the KB's code: its body may call a term it was given, like any body.
safe_lambda(Free/Lambda, Free/Safe) :- nonvar(Lambda), !, safe_lambda(Lambda, Safe).
safe_lambda(Params>>Body, Params>>Safe) :- !, safe_body(trusted, Body, Safe).
safe_lambda(C, C).
safe_arg(Mode, ^, G, Safe) :- !, safe_carets(Mode, G, Safe).
safe_arg(Mode, //, G, Safe) :- !,                % a grammar body: called with two more arguments
    (   var(G) -> Safe = user:lp_closure(G)
    ;   Mode == trusted -> Safe = G
    ;   throw(refused(G))
    ).
safe_arg(_, _, A, A).

safe_carets(Mode, G, Safe) :- nonvar(G), G = V^Inner, !, Safe = V^SafeInner, safe_carets(Mode, Inner, SafeInner).
safe_carets(Mode, G, Safe) :- safe_body(Mode, G, Safe).

user:checked(G) :- safe_body(checked, G, Safe), call(kb:Safe).

user:safe_assert(How, Clause0, Rest) :-
    strip_module(kb:Clause0, M, Clause),
    (   nonvar(Clause), Clause = (H :- B) -> safe_body(trusted, B, SafeB), Safe = (H :- SafeB) ; Safe = Clause ),
    Goal =.. [How, M:Safe|Rest],
    call(Goal).

user:lp_apply(C, Args) :- closure_goal(C, Args, G), user:checked(G).

% Clauses the KB's directives asserted while it loaded get the same rewriting as its source clauses.
sandbox_asserted :-
    forall(( kb_pred(N, A), functor(H, N, A), predicate_property(kb:H, dynamic),
             \+ \+ ( clause(kb:H, B), B \== true, safe_body(trusted, B, SafeB), SafeB \== B ) ),
           ( findall(H-B, clause(kb:H, B), Clauses),
             retractall(kb:H),
             forall(member(H1-B1, Clauses),
                    ( safe_body(trusted, B1, SafeB1), assertz(kb:(H1 :- SafeB1)) )) )).

user:lp_closure(C, A1) :- closure_goal(C, [A1], G), user:checked(G).
user:lp_closure(C, A1, A2) :- closure_goal(C, [A1, A2], G), user:checked(G).
user:lp_closure(C, A1, A2, A3) :- closure_goal(C, [A1, A2, A3], G), user:checked(G).
user:lp_closure(C, A1, A2, A3, A4) :- closure_goal(C, [A1, A2, A3, A4], G), user:checked(G).
user:lp_closure(C, A1, A2, A3, A4, A5) :- closure_goal(C, [A1, A2, A3, A4, A5], G), user:checked(G).
user:lp_closure(C, A1, A2, A3, A4, A5, A6) :- closure_goal(C, [A1, A2, A3, A4, A5, A6], G), user:checked(G).
user:lp_closure(C, A1, A2, A3, A4, A5, A6, A7) :-
    closure_goal(C, [A1, A2, A3, A4, A5, A6, A7], G), user:checked(G).

closure_goal(C, _, _) :- var(C), !, throw(error(instantiation_error, _)).
closure_goal(M:C, Extra, M:G) :- !, closure_goal(C, Extra, G).
closure_goal(C, Extra, G) :-
    (   callable(C) -> true ; throw(error(type_error(callable, C), _)) ),
    C =.. L0, append(L0, Extra, L), G =.. L.

% What a node shows: the term as written, without the sandbox's wrappers.
unwrap(T, T) :- var(T), !.
unwrap(user:checked(G), U) :- !, unwrap(G, U).
unwrap(user:lp_closure(C), U) :- !, unwrap(C, U).
unwrap(user:safe_assert(How, C, Rest), U) :- !, unwrap(C, UC), U =.. [How, UC|Rest].
unwrap(user:lp_apply(C, Args), apply(UC, Args)) :- !, unwrap(C, UC).
unwrap(T, U) :- compound(T), !,
    compound_name_arguments(T, N, Args), maplist(unwrap, Args, UArgs), compound_name_arguments(U, N, UArgs).
unwrap(T, T).

% --- proving --------------------------------------------------------------------------------

handle("prove", Request, Reply) :-
    set_percepts(Request.percepts),
    abolish_all_tables,                       % percepts may have changed what tabled predicates derive
    term_string(Goal0, Request.goal, [variable_names(Names)]),
    Max = Request.max_solutions,
    Probe is Max + 1,                         % one more than shown tells whether the list is complete
    retractall(found_answer(_)),
    bounded(Request, ( safe_body(checked, Goal0, Goal),
                       forall(limit(Probe, call(kb:Goal)), assertz(found_answer(Goal))) ), Outcome),
    findall(Answer, found_answer(Answer), Found),
    length(Found, Count),
    (   Count > Max -> length(Shown, Max), append(Shown, _, Found) ; Shown = Found ),
    (   Outcome == ok, Count =< Max -> Truncated = false ; Outcome == ok -> Truncated = true
    ;   Count > 0 -> Truncated = true ; Truncated = false ),
    verdict(Outcome, Count, Status, Limit, Reason),
    maplist(explained_solution(Request, Goal0, Names), Shown, Solutions),
    (   Status == failed
    ->  % A finished, failed search: the explored alternatives, on a budget of their own.
        safe_body(checked, Goal0, SafeGoal),
        bounded(Request, explored(SafeGoal, Goal0, Names, Request.depth, Explored), Shown1),
        ( Shown1 == ok -> true ; Explored = null )
    ;   Explored = null
    ),
    Reply = _{status: Status, proved: Proved, reason: Reason, limit: Limit, truncated: Truncated,
              solutions: Solutions, explored: Explored},
    ( Status == proved -> Proved = true ; Proved = false ).

% verdict(+Outcome, +Answers, -Status, -Limit, -Reason)
verdict(ok, 0, failed, null, null) :- !.
verdict(ok, _, proved, null, null) :- !.
verdict(Outcome, Count, Status, Limit, Reason) :-
    outcome_reason(Outcome, Limit, Text),
    (   Count > 0
    ->  Status = proved, format(string(Reason), "~w after ~d solutions; more may exist", [Text, Count])
    ;   Status = unknown, Reason = Text
    ).

outcome_reason(inference_limit_exceeded, "inferences", "inference limit exceeded") :- !.
outcome_reason(time_limit_exceeded, "time", "time limit exceeded") :- !.
outcome_reason(error(resource_error(_), _), "memory", "memory (stack) limit exceeded") :- !.
outcome_reason(failed, null, "the engine failed") :- !.
outcome_reason(Error, null, Text) :- message_text(Error, Text).

% bounded(+Request, :Goal, -Outcome): run Goal once under the request's time and inference limits.
bounded(Request, Goal, Outcome) :-
    (   catch(call_with_time_limit(Request.time,
                  call_with_inference_limit(Goal, Request.inferences, Status)),
              Error, true)
    ->  true
    ;   Error = failed
    ),
    (   nonvar(Error) -> Outcome = Error
    ;   Status == inference_limit_exceeded -> Outcome = inference_limit_exceeded
    ;   Outcome = ok
    ).

set_percepts(Percepts) :-
    forall(retract(percept_pred(N, A)), ( functor(H, N, A), retractall(kb:H) )),
    forall(member(P, Percepts), set_percept(P)).

set_percept(P) :-
    atom_string(Name, P.name),
    term_string(Value, P.value),
    (   kb_pred(Name, 1), functor(H, Name, 1), \+ predicate_property(kb:H, dynamic)
    ->  format(string(Msg), "percept ~w/1 is defined statically in the KB; declare it with :- dynamic ~w/1.",
               [Name, Name]),
        throw(error(format(Msg), _))
    ;   true
    ),
    dynamic(kb:Name/1),
    functor(Head, Name, 1),
    retractall(kb:Head),
    Fact =.. [Name, Value],
    assertz(kb:Fact),
    assertz(percept_pred(Name, 1)).

% --- explaining ---------------------------------------------------------------------------------
% Trees are built on the sandboxed goal (so they call only what the proof called) and shown unwrapped.
% A tree is bounded in depth (the request's, at most what Python asks) and in nodes (node_budget).

node_budget(2000).

explained_solution(Request, Goal0, Names0, Answer, Solution) :-
    copy_term(Goal0-Names0, Goal1-Names),
    safe_body(checked, Goal1, Goal),
    Goal = Answer,
    nb_setval(lp_nodes, 0),
    (   bounded(Request, once(explain_root(Goal, Request.depth, Root)), ok)
    ->  true
    ;   Root = node(Goal, "proved by SWI-Prolog; no goal tree: building it hit a limit or an error", [], true)
    ),
    export_tree(Names, Root, Tree, Bindings),
    Solution = _{bindings: Bindings, tree: Tree}.

explain_root(Goal, Depth, Root) :-
    (   ex(Goal, Depth, [], Nodes) -> root(Goal, Nodes, true, Root)
    ;   Root = node(Goal, "proved by SWI-Prolog; no loop-free explanation within the depth limit", [], true)
    ).

% A single goal is its own root; a conjunction gets a "query" node over its conjuncts.
root(Goal, [Node], _, Node) :- Goal \= (_, _), !.
root(Goal, Nodes, Proved, node(Goal, query, Nodes, Proved)).

native(G) :- call(kb:G).

spend_node :-
    nb_getval(lp_nodes, N), N1 is N + 1, nb_setval(lp_nodes, N1),
    node_budget(Max), N1 =< Max.

% ex(+Body, +Depth, +Ancestors, -Nodes): a solution of Body (found natively), with the nodes that
% explain it; on backtracking, the next solution.
ex(true, _, _, []) :- !.
ex(!, _, _, []) :- !.
ex((A, B), D, Anc, Nodes) :- !,
    ex(A, D, Anc, N1), ex(B, D, Anc, N2), append(N1, N2, Nodes).
ex((C -> T ; E), D, Anc, Nodes) :- !,
    (   native(C) -> ex_det(C, D, Anc, N1), ex(T, D, Anc, N2), append(N1, N2, Nodes)
    ;   ex(E, D, Anc, Nodes) ).
ex((C *-> T ; E), D, Anc, Nodes) :- !,
    (   native(C) *-> ex_det(C, D, Anc, N1), ex(T, D, Anc, N2), append(N1, N2, Nodes)
    ;   ex(E, D, Anc, Nodes) ).
ex((A ; B), D, Anc, Nodes) :- !,
    ( ex(A, D, Anc, Nodes) ; ex(B, D, Anc, Nodes) ).
ex((C -> T), D, Anc, Nodes) :- !,
    native(C), !, ex_det(C, D, Anc, N1), ex(T, D, Anc, N2), append(N1, N2, Nodes).
ex(\+ G, D, Anc, [node(\+ G, "negation as failure: the negated goal fails", Why, true)]) :- !,
    \+ native(G),
    D1 is D - 1,
    why_not(G, D1, Anc, Why).
ex(user:checked(G), D, Anc, Nodes) :- !,
    safe_body(checked, G, Safe), ex(Safe, D, Anc, Nodes).
ex(kb:G, D, Anc, Nodes) :- !, ex(G, D, Anc, Nodes).
ex(G, D, Anc, Nodes) :-                   % call/N and checked closures: explain the goal they call
    called_goal(G, Called), !,
    ex(Called, D, Anc, Nodes).
ex(G, D, Anc, [Node]) :-
    user_goal(G), !,
    native(G),
    why(G, D, Anc, Node).
ex(G, D, Anc, [node(G, Label, Children, true)]) :-
    native(G),
    builtin_label(G, Label),
    inner_trees(G, D, Anc, Children).

% ex_det(+Body, ...): Body is true as instantiated now; one explanation of it, or a leaf saying none.
ex_det(Body, D, Anc, Nodes) :-
    (   ex(Body, D, Anc, Nodes0) -> Nodes = Nodes0
    ;   Nodes = [node(Body, "proved by SWI-Prolog; no loop-free explanation within the depth limit", [], true)]
    ).

called_goal(call(G), G) :- !.
called_goal(G, Called) :-
    compound(G), compound_name_arguments(G, call, [C|Extra]), Extra \== [], !,
    closure_goal(C, Extra, Called).
called_goal(G, user:checked(Called)) :-
    G = user:Closure, compound(Closure), compound_name_arguments(Closure, lp_closure, [C|Extra]),
    closure_goal(C, Extra, Called).

user_goal(M:G) :- !, module_local(M, G).
user_goal(G) :- callable(G), functor(G, N, A), ( kb_pred(N, A) -> true ; percept_pred(N, A) ).

% A module KB's own predicate that kb does not see (not exported): explained in its module.
module_local(M, G) :-
    atom(M), M \== kb, callable(G),
    predicate_property(M:G, number_of_clauses(_)), \+ predicate_property(M:G, imported_from(_)).

% home_clause(+G, -Body, -Ref): a clause of G whose body names, qualified, the module-local predicates
% of the module it was written in (so that they can be called and explained from kb).
home_clause(G, Body, Ref) :-
    clause(kb:G, Body0, Ref),
    (   clause_property(Ref, module(M)), M \== kb -> qualify(M, Body0, Body) ; Body = Body0 ).

qualify(_, B, B) :- var(B), !.
qualify(M, (A, B), (QA, QB)) :- !, qualify(M, A, QA), qualify(M, B, QB).
qualify(M, (A ; B), (QA ; QB)) :- !, qualify(M, A, QA), qualify(M, B, QB).
qualify(M, (A -> B), (QA -> QB)) :- !, qualify(M, A, QA), qualify(M, B, QB).
qualify(M, (A *-> B), (QA *-> QB)) :- !, qualify(M, A, QA), qualify(M, B, QB).
qualify(M, \+ A, \+ QA) :- !, qualify(M, A, QA).
qualify(M, G, M:G) :- module_local(M, G), functor(G, N, A), \+ kb_pred(N, A), !.
qualify(_, G, G).

% why(+G, +D, +Anc, -Node): G (a KB goal, true as instantiated) holds by its first clause whose body
% can be explained without reopening an ancestor; fails if none (so the caller tries another answer).
why(G, _, Anc, _) :- member(A, Anc), A =@= G, !, fail.
why(G, D, _, node(G, "depth limit: not expanded", [], true)) :- D =< 0, !.
why(G, _, _, node(G, "tree size limit: not expanded", [], true)) :- \+ spend_node, !.
why(G, D, Anc, node(G, Label, Children, true)) :-
    D1 is D - 1,
    home_clause(G, Body, Ref),
    ex(Body, D1, [G|Anc], Children), !,
    clause_label(Ref, Label).

% The subtrees under an aggregate or forall: up to five of the inner goal's solutions.
inner_trees(G, D, Anc, Children) :-
    D > 0, inner_goal(G, Inner), !,
    D1 is D - 1,
    findall(Ns, limit(5, ex(Inner, D1, Anc, Ns)), Lists),
    append(Lists, Children).
inner_trees(_, _, _, []).

inner_goal(findall(_, G, _), G).
inner_goal(findall(_, G, _, _), G).
inner_goal(aggregate_all(_, G, _), G).
inner_goal(aggregate_all(_, _, G, _), G).
inner_goal(forall(C, A), (C, A)).
inner_goal(once(G), G).
inner_goal(ignore(G), G).
inner_goal(bagof(_, G, _), G1) :- strip_carets(G, G1).
inner_goal(setof(_, G, _), G1) :- strip_carets(G, G1).

strip_carets(G, G) :- var(G), !.
strip_carets(_^G, I) :- !, strip_carets(G, I).
strip_carets(G, G).

% why_not(+G, +D, +Anc, -Nodes): G fails; the explored alternatives, as for a failed query.
why_not(_, D, _, []) :- D =< 0, !.
why_not(G, D, Anc, Nodes) :-
    (   catch(exp(G, D, Anc, Nodes, _, _), _, fail) -> true ; Nodes = [] ).

% exp(+Body, +D, +Anc, -Nodes, -Proved, -Cut): after a failed proof, the tree that was tried.
% Conjunctions stop at the first failing conjunct; a succeeding conjunct keeps its first solution.
% Cut is true when the body's cut was reached, so later clauses were never tried.
exp(true, _, _, [], true, false) :- !.
exp(!, _, _, [], true, true) :- !.
exp((A, B), D, Anc, Nodes, Proved, Cut) :- !,
    exp(A, D, Anc, N1, P1, C1),
    (   P1 == true
    ->  exp(B, D, Anc, N2, Proved, C2), append(N1, N2, Nodes), ( C1 == true -> Cut = true ; Cut = C2 )
    ;   Nodes = N1, Proved = false, Cut = C1 ).
exp((C -> T ; E), D, Anc, Nodes, Proved, false) :- !,
    (   native(C) -> ex_det(C, D, Anc, N1), exp(T, D, Anc, N2, Proved, _), append(N1, N2, Nodes)
    ;   exp(C, D, Anc, N1, _, _), exp(E, D, Anc, N2, Proved, _), append(N1, N2, Nodes) ).
exp((A ; B), D, Anc, Nodes, Proved, false) :- !,
    exp(A, D, Anc, N1, P1, _),
    (   P1 == true -> Nodes = N1, Proved = true
    ;   exp(B, D, Anc, N2, Proved, _), append(N1, N2, Nodes) ).
exp(\+ G, D, Anc, [Node], Proved, false) :- !,
    D1 is D - 1,
    (   native(G)
    ->  ( D1 > 0 -> ex_det(G, D1, Anc, Inner) ; Inner = [] ),
        Node = node(\+ G, "negation as failure: the negated goal holds", Inner, false), Proved = false
    ;   why_not(G, D1, Anc, Why),
        Node = node(\+ G, "negation as failure: the negated goal fails", Why, true), Proved = true ).
exp(user:checked(G), D, Anc, Nodes, Proved, false) :- !,
    safe_body(checked, G, Safe), exp(Safe, D, Anc, Nodes, Proved, _).
exp(G, D, Anc, Nodes, Proved, false) :-
    (   native(G)
    ->  ex_det(G, D, Anc, Nodes), Proved = true
    ;   user_goal(G)
    ->  explore_goal(G, D, Anc, Node), Nodes = [Node], Proved = false
    ;   builtin_label(G, Label), Nodes = [node(G, Label, [], false)], Proved = false ).

explore_goal(G, _, Anc, node(G, "loop check: a variant of an open goal", [], false)) :-
    member(A, Anc), A =@= G, !.
explore_goal(G, D, _, node(G, "depth limit", [], false)) :- D =< 0, !.
explore_goal(G, _, _, node(G, "tree size limit: not expanded", [], false)) :- \+ spend_node, !.
explore_goal(G, D, Anc, Node) :-
    D1 is D - 1,
    findall(G-Body-Ref, limit(20, home_clause(G, Body, Ref)), Clauses),
    attempts(Clauses, D1, [G|Anc], Attempts),
    (   Attempts = [Node] -> true                         % one clause tried: show it, not a wrapper
    ;   Attempts == [] -> Node = node(G, "no matching clause", [], false)
    ;   Node = node(G, "no clause succeeded", Attempts, false) ).

attempts([], _, _, []).
attempts([G-Body-Ref|More], D, Anc, [node(G, Label, Nodes, false)|Rest]) :-
    clause_label(Ref, Label),
    exp(Body, D, Anc, Nodes, _, Cut),
    (   Cut == true -> Rest = [] ; attempts(More, D, Anc, Rest) ).

explored(SafeGoal, Goal0, Names, Depth, Explored) :-
    nb_setval(lp_nodes, 0),
    exp(SafeGoal, Depth, [], Nodes, _, _),
    root(Goal0, Nodes, false, Root),
    export_tree(Names, Root, Explored, _).

% --- output -------------------------------------------------------------------------------------

% export_tree(+Names, +Root, -Tree, -Bindings): copy, name the query's variables by their written
% names and the rest _A, _B, ..., then render the tree and the named variables' values.
export_tree(Names, Root0, Tree, Bindings) :-
    unwrap(Root0, Root),
    copy_term(Names-Root, Names2-Root2),
    maplist(name_variable, Names2),
    term_variables(Names2-Root2, Fresh),   % answers first, so their _A, _B.. do not depend on the tree
    foldl(name_fresh, Fresh, 0, _),
    node_dict(Root2, Tree),
    findall(N-S, ( member(N=V, Names2), \+ sub_atom(N, 0, _, _, '_'), text(V, S) ), Pairs),
    dict_pairs(Bindings, _, Pairs).

name_variable(N=V) :- ( var(V) -> V = '$VAR'(N) ; true ).

% Variables an answer leaves free are written _A, _B, ..., _Z, _A1, ... (never like a query variable).
name_fresh('$VAR'(Name), I, I1) :-
    I1 is I + 1,
    Letter is 0'A + I mod 26, Round is I // 26,
    (   Round =:= 0 -> format(atom(Name), "_~c", [Letter]) ; format(atom(Name), "_~c~d", [Letter, Round]) ).

% However the tree was built, what is sent is at most export_depth levels deep (Python reads it).
export_depth(70).   % pydantic reads a record back (a resumed run) up to about 100 node levels

node_dict(Node, Dict) :- node_dict(1, Node, Dict).

node_dict(Level, node(G, Label, Children, Proved), _{goal: S, clause: L, children: Cs, proved: Proved}) :-
    text(G, S),
    export_depth(Max),
    (   Level >= Max, Children \== []
    ->  L = "tree depth limit: not expanded", Cs = []
    ;   label_text(Label, L),
        Next is Level + 1,
        maplist(node_dict(Next), Children, Cs)
    ).

label_text(Label, Text) :- string(Label), !, Text = Label.
label_text(Label, Text) :- format(string(Text), "~w", [Label]).

% Prolog's own quoted writing with the KB's operators: what is printed reads back as the same term.
text(T, S) :-
    format(string(S), "~W", [T, [quoted(true), numbervars(true), spacing(next_argument), module(kb),
                                 portray(false), ignore_ops(false)]]).

clause_label(Ref, Label) :-
    clause_property(Ref, file(F)), clause_property(Ref, line_count(L)), !,
    shown_file(F, Name),
    format(string(Label), "~w:~w", [Name, L]).
clause_label(Ref, "percept") :-
    clause(H, _, Ref), strip_module(H, _, P), functor(P, N, A), percept_pred(N, A), !.
clause_label(_, "asserted").

builtin_label(G, Label) :-
    unwrap(G, U), strip_module(U, _, P), functor(P, N, A), format(string(Label), "~w/~w", [N, A]).
